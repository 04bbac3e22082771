//! One request's path through the server, in the steps the module docs list: identify,
//! the fast path of status faults answered at once, arrival, body, fault verdict, dedup,
//! the work (in its own task), the answer and its delivery. Every kind of server (the
//! built-in target, the proxy, the standalone proxy) answers through it.

use std::hash::Hasher;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Body;
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use tokio::time::Instant;

use super::body::ReqBody;
use super::deadline;
use super::dedup::{Begin, Dedup, Ticket};
use super::delivery::{self, CloseHold, Delivered};
use super::provider::Routed;
use super::slots::Refused;
use super::{
    grpc, parse_u64, proxy, shutdown_signal, spawn_tracked, ArmedFaults, CloseConnection, InFlight,
    Resp, Shared, StatusParts,
};
use crate::headers::{
    H_AMOUNT, H_ATTEMPT, H_ERROR_TYPE, H_IDEMPOTENCY_KEY, H_REQUEST, H_RETRY_AFTER_MS,
    H_SHOULD_RETRY,
};
use crate::scenario::timeline::Action;
use crate::shed::Shed;

pub(crate) fn respond(
    shared: &Shared,
    status: StatusCode,
    body: &'static [u8],
    served: bool,
) -> Resp {
    shared.counters.respond(status.as_u16(), served);
    let mut r = Response::new(Full::new(Bytes::from_static(body)));
    *r.status_mut() = status;
    r
}

/// The answer of a status fault (not counted here).
fn status_response(parts: &StatusParts) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from_static(b"fault\n")));
    *r.status_mut() = parts.status;
    if let Some(ra) = &parts.retry_after {
        r.headers_mut().insert(RETRY_AFTER, ra.clone());
    }
    if let Some(ms) = &parts.retry_after_ms {
        r.headers_mut().insert(H_RETRY_AFTER_MS, ms.clone());
    }
    if let Some(s) = &parts.should_retry {
        r.headers_mut().insert(H_SHOULD_RETRY, s.clone());
    }
    if let Some(et) = &parts.error_type {
        r.headers_mut().insert(H_ERROR_TYPE, et.clone());
    }
    r
}

/// What the work task reports back.
enum Worked {
    Served,
    /// The service shed it, for this reason (counted).
    Shed(Shed),
    /// Proxy mode: what the real server (or the gateway error standing for it) answered,
    /// and whether the request reached it.
    Relayed {
        resp: Resp,
        forwarded: bool,
    },
    /// Proxy mode: the real server reset the request; the client is reset the same way.
    /// Whether the client came over HTTP/2: its stream is then reset, whatever the service
    /// reset (the client's connection carries other streams); over HTTP/1.1 it is closed.
    UpstreamReset(proxy::UpstreamReset, bool),
}

/// One request answered and delivered: shaped on its way back when a connection-level fault
/// decided it (the answer carries the [`crate::scenario::Delivery`] as an extension).
pub(super) async fn serve_request(
    shared: Arc<Shared>,
    req: Request<ReqBody>,
    hold: CloseHold,
    h2: bool,
) -> Result<Response<Delivered>, CloseConnection> {
    // The rare paths below (control traffic, gRPC framing, lost answers, delivery faults)
    // are boxed where they are taken: hyper keeps this future for as long as the request
    // is in flight (every hanging request of a hang fault), at the size of its largest state.
    let call = grpc::is_call(&req);
    let mut resp = handle(shared, req).await?;
    if call {
        // A gRPC answer is shaped by gRPC's framing; connection-level delivery faults
        // apply to plain HTTP answers only.
        return Ok(Box::pin(grpc::answer(resp)).await);
    }
    let delivery = resp.extensions_mut().remove::<crate::scenario::Delivery>();
    Ok(match delivery {
        None => delivery::deliver(resp, None, &hold, h2).await,
        Some(d) => Box::pin(delivery::deliver(resp, Some(d), &hold, h2)).await,
    })
}

/// One request, in the steps the module docs list: identify, the fast path of status faults
/// answered at once, arrival, body, fault verdict, dedup, the work, the answer.
async fn handle(shared: Arc<Shared>, req: Request<ReqBody>) -> Result<Resp, CloseConnection> {
    if shared.control.is_some() && req.uri().path().starts_with(proxy::CONTROL_PREFIX) {
        // Control traffic is not storm traffic: never counted, never faulted.
        return Ok(Box::pin(proxy::control(&shared, req)).await);
    }
    // The arrival's run time; it is counted below, once the verdict says how.
    let (t, sec) = shared.counters.now();
    let (request, attempt) = identify(&shared, &req);
    claim(&shared, request, attempt)?;
    let class = note_arrival(&shared, request, t);
    let routed = shared
        .providers
        .arrive(req.uri().path(), req.headers(), (request, attempt), t);
    if let (Some((class, _)), Some(r)) = (class, &routed) {
        shared.counters.class_tokens(class, r.tokens(), false);
    }
    let class_served = move |shared: &Shared| {
        if let (Some((class, _)), Some(r)) = (class, &routed) {
            shared.counters.class_tokens(class, r.tokens(), true);
        }
    };
    let (faults, fault_epoch) = match answer_at_once(&shared, &req, t, sec, request, attempt) {
        Ok(resp) => return Ok(resp),
        Err(armed) => armed,
    };
    let arrived = shared.counters.arrive_at(sec);
    let _in_flight = InFlight(&shared.counters);

    let write = class.map_or(!matches!(*req.method(), Method::GET | Method::HEAD), |c| {
        c.1
    });
    let amount = parse_u64(req.headers().get(H_AMOUNT)).unwrap_or(1);
    // Deterministic: the same verdict as the fast path saw, from the same timeline.
    let tf = (shared.counters.epoch() + t).saturating_duration_since(fault_epoch);
    let verdict = faults
        .timeline
        .decide(tf, req.uri().path(), request, attempt);
    faults.hit(verdict.fault);
    let key = match &shared.dedup {
        Some(_) if write => req.headers().get(H_IDEMPOTENCY_KEY).cloned(),
        _ => None,
    };

    let (parts, body) = req.into_parts();
    let (body_hash, kept) = match read_body(&shared, body, key.is_some()).await? {
        ReadBody::Read { hash, kept } => (hash, kept),
        ReadBody::TooLarge => {
            return Ok(respond(
                &shared,
                StatusCode::PAYLOAD_TOO_LARGE,
                b"request body too large\n",
                false,
            ))
        }
    };

    let delivery = match verdict.action {
        Action::Deliver(d) => Some(d),
        _ => None,
    };
    let lost = match verdict.action {
        Action::Serve | Action::Deliver(_) => None,
        Action::LostResponse { status } => Some(status),
        terminal => return fault_answer(&shared, &faults, terminal, &verdict).await,
    };
    // A provider's own limits come after the fault windows (an outage answers first).
    let provider_latency = match admit(&shared, routed, t) {
        Ok(latency) => latency,
        Err(throttled) => return Ok(*throttled),
    };

    let ticket = match &shared.dedup {
        Some(dedup) => match key {
            Some(key) => match deduplicate(&shared, dedup, key, body_hash) {
                Deduped::Execute(ticket) => Some(ticket),
                Deduped::Replay(_) if lost.is_some() => {
                    // The stored response travels the same lossy path as the first one.
                    return Box::pin(lose(&shared, lost.flatten())).await;
                }
                Deduped::Replay(resp) | Deduped::Answer(resp) => return Ok(resp),
            },
            None => None,
        },
        None => None,
    };

    let service_time = provider_latency.unwrap_or_else(|| {
        faults
            .timeline
            .service_time(&shared.model, request, attempt)
    });
    let job = Job {
        parts,
        body: kept.into(),
        extra: verdict.extra_latency,
        service_time,
        write,
        request,
        amount,
        ticket,
        arrived,
        arrived_at: shared.counters.epoch() + t,
    };
    // If the client goes away, this future is dropped; the work task carries on.
    let worked = match spawn_tracked(&shared, work(shared.clone(), job)).await {
        Ok(Some(w)) => w,
        _ => return Err(CloseConnection::because("shut down during service")),
    };
    let mut resp = answer(&shared, worked, lost).await;
    if let (Some(r), Ok(resp)) = (routed, &resp) {
        if resp.status() == StatusCode::OK {
            shared.providers.served(r);
            class_served(&shared);
        }
    }
    if let (Some(d), Ok(resp)) = (delivery, &mut resp) {
        resp.extensions_mut().insert(d);
    }
    resp
}

/// The arrival's own records, before its verdict: its request id and run time in the
/// arrival log, once asked for, and its request class (counted) with whether the class's
/// calls are writes, once the target counts classes.
fn note_arrival(shared: &Shared, request: u64, t: Duration) -> Option<(usize, bool)> {
    if let Some(log) = shared.arrival_log.get() {
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((request, t));
    }
    shared.classes.get().map(|c| {
        // Counted beside the arrival (every request from here on is one, answered at once
        // or not): the class comes from the id alone, as the client drew it.
        let class = c.mix.class_of(c.seed, request);
        shared.counters.class_arrived(class);
        (class, c.writes[class])
    })
}

/// A provider's own limits for a request `routed` to it: the latency it serves with, or
/// its throttling answer (counted); `None` for a request to the plain service.
fn admit(
    shared: &Shared,
    routed: Option<Routed>,
    t: Duration,
) -> Result<Option<Duration>, Box<Resp>> {
    match routed {
        Some(r) => match shared.providers.admit(r, t) {
            Ok(latency) => Ok(Some(latency)),
            Err(throttled) => {
                shared.counters.respond(throttled.status().as_u16(), false);
                Err(throttled)
            }
        },
        None => Ok(None),
    }
}

/// The request id and attempt the load generator put on the request; a request without an
/// id (external traffic) gets the next id of the server's own counter, a missing attempt 1.
/// Settles the attempt with its client when it announced it ([`super::Claims`]): one its
/// client gave up on before it was read (and counted as never read) is neither counted nor
/// answered.
fn claim(shared: &Shared, request: u64, attempt: u32) -> Result<(), CloseConnection> {
    match shared.claims.get() {
        Some(claims) if !claims.read(request, attempt) => Err(CloseConnection::because(
            "its client gave up before it was read",
        )),
        _ => Ok(()),
    }
}

fn identify(shared: &Shared, req: &Request<ReqBody>) -> (u64, u32) {
    let request = parse_u64(req.headers().get(H_REQUEST))
        .unwrap_or_else(|| shared.external_ids.fetch_add(1, Ordering::Relaxed));
    let attempt = parse_u64(req.headers().get(H_ATTEMPT))
        .and_then(|a| u32::try_from(a).ok())
        .unwrap_or(1);
    (request, attempt)
}

/// Fast path: a request without a body whose verdict is a status fault answered at once is
/// in flight only while it is counted; no await, no clone of the timeline. Otherwise the
/// timeline in force and its epoch, for the slow path.
fn answer_at_once(
    shared: &Shared,
    req: &Request<ReqBody>,
    t: Duration,
    sec: usize,
    request: u64,
    attempt: u32,
) -> Result<Resp, (Arc<ArmedFaults>, Instant)> {
    let armed = shared.armed.read().unwrap_or_else(|e| e.into_inner());
    // Fault windows run from their own epoch (the run's, unless the standalone proxy
    // started them later).
    let tf = (shared.counters.epoch() + t).saturating_duration_since(armed.epoch);
    let verdict = armed
        .faults
        .timeline
        .decide(tf, req.uri().path(), request, attempt);
    if let (Action::Status { .. }, true, true, Some(parts)) = (
        verdict.action,
        verdict.extra_latency.is_zero(),
        req.body().is_end_stream(),
        armed.faults.status_parts(verdict.fault),
    ) {
        armed.faults.hit(verdict.fault);
        shared.counters.answer_at_once(sec, parts.status.as_u16());
        return Ok(status_response(parts));
    }
    Err((armed.faults.clone(), armed.epoch))
}

/// A request body read to its end.
enum ReadBody {
    /// Hashed (for dedup, when `hash` was asked) and kept (to forward, in proxy mode).
    Read { hash: u64, kept: Vec<u8> },
    /// Longer than [`proxy::MAX_BODY`] where it had to be kept.
    TooLarge,
}

/// Reads the body to its end so the connection stays usable; hashes it for dedup; keeps it
/// when it is to be forwarded, up to [`proxy::MAX_BODY`] (memory per request is bounded).
async fn read_body(
    shared: &Shared,
    mut body: ReqBody,
    hash: bool,
) -> Result<ReadBody, CloseConnection> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut kept = Vec::new();
    let keep = shared.upstream.is_some();
    if !body.is_end_stream() {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| CloseConnection::because("request body unreadable"))?;
            if let Some(data) = frame.data_ref() {
                if hash {
                    hasher.write(data);
                }
                if keep {
                    if kept.len() + data.len() > proxy::MAX_BODY {
                        return Ok(ReadBody::TooLarge);
                    }
                    kept.extend_from_slice(data);
                }
            }
        }
    }
    Ok(ReadBody::Read {
        hash: hasher.finish(),
        kept,
    })
}

/// The answer of a terminal fault (status, reset, hang), after its added latency.
async fn fault_answer(
    shared: &Shared,
    faults: &ArmedFaults,
    action: Action<'_>,
    verdict: &crate::scenario::timeline::FaultVerdict<'_>,
) -> Result<Resp, CloseConnection> {
    if !verdict.extra_latency.is_zero() {
        tokio::time::sleep(verdict.extra_latency).await;
    }
    match action {
        Action::Status { .. } => {
            let parts = faults
                .status_parts(verdict.fault)
                .ok_or(CloseConnection::because("status fault without its parts"))?;
            shared.counters.respond(parts.status.as_u16(), false);
            Ok(status_response(parts))
        }
        Action::GrpcStatus { status, pushback } => {
            // Trailers-only: on the wire an HTTP 200 that is not a served answer.
            shared.counters.respond(StatusCode::OK.as_u16(), false);
            Ok(grpc::fault_response(status, pushback))
        }
        Action::Reset => {
            shared.counters.reset();
            Err(CloseConnection::because("reset fault"))
        }
        _ => {
            shared.counters.hang();
            shutdown_signal(shared.shutdown.clone()).await;
            Err(CloseConnection::because("hang fault ended by shutdown"))
        }
    }
}

/// What the dedup store says about a keyed write.
enum Deduped {
    /// First of its key: execute, then complete the ticket.
    Execute(Ticket),
    /// Already executed: the stored answer.
    Replay(Resp),
    /// A conflict (409) or a key reused with another body (422).
    Answer(Resp),
}

fn deduplicate(shared: &Shared, dedup: &Arc<Dedup>, key: HeaderValue, body_hash: u64) -> Deduped {
    match dedup.begin(&key, body_hash) {
        Begin::Execute => Deduped::Execute(Ticket::new(dedup.clone(), key, body_hash)),
        Begin::Replay(status) => {
            shared.counters.dedup_replay();
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            Deduped::Replay(respond(shared, status, b"replayed\n", false))
        }
        Begin::Conflict => {
            shared.counters.dedup_conflict();
            Deduped::Answer(respond(shared, StatusCode::CONFLICT, b"conflict\n", false))
        }
        Begin::Mismatch => {
            shared.counters.dedup_mismatch();
            Deduped::Answer(respond(
                shared,
                StatusCode::UNPROCESSABLE_ENTITY,
                b"idempotency key reused with another body\n",
                false,
            ))
        }
    }
}

/// The work a request asks of the target, done in its own task.
struct Job {
    parts: hyper::http::request::Parts,
    body: Bytes,
    extra: Duration,
    service_time: Duration,
    write: bool,
    request: u64,
    amount: u64,
    ticket: Option<Ticket>,
    /// The second the arrival was counted at, to take it back out if the real server
    /// cannot be reached (proxy mode).
    arrived: usize,
    /// When it arrived: a relayed gRPC call's deadline is shortened by the time since.
    arrived_at: Instant,
}

/// Queue for a slot, then serve (the service model) or forward (proxy mode).
async fn work(s: Arc<Shared>, job: Job) -> Worked {
    if !job.extra.is_zero() {
        tokio::time::sleep(job.extra).await;
    }
    let granted = match s.slots.acquire().await {
        Ok(granted) => granted,
        // The ticket drops in either case: the key is forgotten.
        Err(Refused::Shed(why)) => {
            s.counters.shed(why.reason());
            return Worked::Shed(why);
        }
        // Shutting down: answered 503, not counted as a shed of the service.
        Err(Refused::Closed) => return Worked::Shed(Shed::QueueFull),
    };
    if let Some(upstream) = &s.upstream {
        let over_h2 = job.parts.version == hyper::Version::HTTP_2;
        let (resp, forwarded) = upstream
            .forward(&s.counters, job.parts, job.body, job.arrived_at)
            .await;
        s.slots.release(granted);
        if !forwarded {
            s.counters.unreached(job.arrived);
        }
        if forwarded {
            if job.write {
                s.counters.execute(job.request, job.amount);
            }
            if let Some(ticket) = job.ticket {
                ticket.complete(resp.status().as_u16());
            }
        }
        if let Some(reset) = resp.extensions().get::<proxy::UpstreamReset>() {
            return Worked::UpstreamReset(*reset, over_h2);
        }
        return Worked::Relayed { resp, forwarded };
    }
    drop(job.parts);
    // The slot is held for the service time from the instant it was granted, to the
    // microsecond: tokio's millisecond timer would hold it ~1.3 ms longer (see `deadline`),
    // and the next waiter's time runs from the end of this one's service.
    let ended = granted.granted + job.service_time;
    deadline::until(ended).await;
    s.slots.release_at(ended, granted);
    if job.write {
        s.counters.execute(job.request, job.amount);
    }
    if let Some(ticket) = job.ticket {
        ticket.complete(200);
    }
    Worked::Served
}

/// The answer to the client once the work is done: served, shed, relayed, or lost.
async fn answer(
    shared: &Shared,
    worked: Worked,
    lost: Option<Option<u16>>,
) -> Result<Resp, CloseConnection> {
    match (worked, lost) {
        (Worked::UpstreamReset(reset, over_h2), _) => {
            shared.counters.relayed_reset(over_h2);
            shared
                .counters
                .trouble_seen(super::counters::Trouble::Reset);
            Err(CloseConnection::with_code("upstream reset", reset.code()))
        }
        (Worked::Shed(Shed::RateLimited), _) => {
            let mut r = respond(
                shared,
                StatusCode::TOO_MANY_REQUESTS,
                b"rate limited\n",
                false,
            );
            let after = shared
                .model
                .shedding
                .rate_limit
                .and_then(|l| l.retry_after_s);
            if let Some(secs) = after {
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
            }
            Ok(r)
        }
        (Worked::Shed(_), _) => Ok(respond(
            shared,
            StatusCode::SERVICE_UNAVAILABLE,
            b"overloaded\n",
            false,
        )),
        (Worked::Served, None) => Ok(respond(shared, StatusCode::OK, b"ok\n", true)),
        (Worked::Relayed { resp, forwarded }, None)
        | (
            Worked::Relayed {
                resp,
                forwarded: forwarded @ false,
            },
            _,
        ) => {
            let status = resp.status();
            // A relayed gRPC call is served when its own status says so (a failed call
            // travels in an HTTP 200).
            let call_ok =
                resp.extensions().get::<grpc::Relayed>().is_none() || grpc::relayed_ok(&resp);
            shared
                .counters
                .respond(status.as_u16(), forwarded && status.is_success() && call_ok);
            Ok(resp)
        }
        (
            Worked::Served
            | Worked::Relayed {
                forwarded: true, ..
            },
            Some(status),
        ) => Box::pin(lose(shared, status)).await,
    }
}

/// Loses a response under a lost-response fault: answers the fault's gateway `status`
/// (checked when the fault was armed), or nothing until the client gives up. Counted as
/// lost.
async fn lose(shared: &Shared, status: Option<u16>) -> Result<Resp, CloseConnection> {
    shared.counters.lost_response();
    match status.and_then(|s| StatusCode::from_u16(s).ok()) {
        Some(status) => Ok(respond(shared, status, b"lost\n", false)),
        None => {
            // The response is lost on the way: the client waits until it gives up.
            shutdown_signal(shared.shutdown.clone()).await;
            Err(CloseConnection::because("lost response ended by shutdown"))
        }
    }
}
