//! The built-in target: a hyper 1.x server on loopback (HTTP/1.1 or HTTP/2, in clear or
//! over TLS with a certificate generated at start, see [`Listen`]) that receives the storm,
//! applies a service model (concurrency slots, bounded FIFO queue, queue timeout, sampled
//! service time) and a timed fault timeline, and counts exactly what it received.
//!
//! Per request, in order:
//! 1. the arrival is counted and the request goes in flight (first thing in the service fn,
//!    once hyper has read the request head); an RAII guard takes it out of flight whenever
//!    the request ends, including when the client drops the connection;
//! 2. the request body (if any) is read to its end (hashed when it carries an
//!    `Idempotency-Key` that the target deduplicates);
//! 3. [`FaultTimeline::decide`] gives the verdict for (run time, path, request id, attempt);
//!    added latency is waited first, then the terminal action: status, reset, hang;
//! 4. otherwise (serve or lost-response) the optional dedup check, then the *work*: queue
//!    for a slot, service time, execution count. The work runs in its own task, so a client
//!    that gives up does not cancel work the server has already accepted: a real server
//!    keeps serving abandoned requests, which is how retry storms overload it;
//! 5. a connection-level verdict (bandwidth, slicer, slow close) shapes how the answer
//!    travels back (`delivery`).
//!
//! Request identity comes from [`crate::headers::REQUEST`] and [`crate::headers::ATTEMPT`].
//! A request without a request id (external traffic) gets one from a per-server counter
//! starting at 2^63, so it never collides with the load generator's ids; a missing attempt
//! means 1.
//!
//! Over HTTP/2, a **reset** fault resets the request's stream (RST_STREAM), not the
//! connection the other streams share; the arrival is counted like any other. A client whose
//! TLS handshake fails never sent a request: nothing is counted.

mod body;
mod claims;
mod counters;
mod deadline;
mod dedup;
mod delivery;
mod fault_api;
mod frame_budget;
mod grpc;
mod lean;
mod provider;
pub mod proxy;
mod relay;
mod request;
mod slots;
pub mod toxiproxy;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::metrics::TargetStats;
use crate::scenario::provider::Provider;
use crate::scenario::timeline::FaultTimeline;
use crate::scenario::{DedupSpec, Fault, FaultKind, Protocol, ServiceModel};

pub use claims::{Claims, Settled};
use counters::Counters;
use dedup::Dedup;
use delivery::{CloseHold, Delivered, HeldClose};
use request::serve_request;
use slots::Slots;

/// First request id given to requests that carry none.
pub const EXTERNAL_REQUEST_BASE: u64 = 1 << 63;

/// What the built-in target does.
#[derive(Debug, Clone)]
pub struct TargetConfig {
    pub model: ServiceModel,
    pub faults: Vec<Fault>,
    /// Seed of the fault and service-time draws (the scenario's seed).
    pub seed: u64,
    pub dedup: Option<DedupSpec>,
}

/// What a server speaks on its listener: the HTTP version, and TLS with its configuration.
#[derive(Debug, Clone, Default)]
pub struct Listen {
    pub protocol: Protocol,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Listen {
    /// Serves `protocol` with a certificate made now when `tls`; the certificate goes back
    /// to the caller, for the client side of the same run to trust.
    pub fn generated(
        protocol: Protocol,
        tls: bool,
    ) -> Result<(Listen, Option<rustls::pki_types::CertificateDer<'static>>), TargetError> {
        if !tls {
            return Ok((
                Listen {
                    protocol,
                    tls: None,
                },
                None,
            ));
        }
        let made = crate::tls::self_signed(protocol).map_err(TargetError::Tls)?;
        Ok((
            Listen {
                protocol,
                tls: Some(made.server),
            },
            Some(made.certificate),
        ))
    }
}

/// Which server speaks HTTP/1.1 in clear: the lean connection (`lean`) unless told
/// otherwise; hyper's stays reachable to compare the two side by side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum H1Server {
    #[default]
    Lean,
    Hyper,
}

/// Longest a client may take over its TLS handshake before the server drops it.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("TLS: {0}")]
    Tls(crate::tls::TlsError),
    #[error("cannot bind the built-in target to {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the address the built-in target bound to ({bind}): {source}")]
    LocalAddr {
        bind: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "upstream host `{host}` is not loopback; a storm never leaves the machine by accident: \
         name it explicitly to allow it (--allow-remote {host}, or allow_remote = \"{host}\" in the scenario's target)"
    )]
    Remote { host: String },
    #[error("fault #{index} ({label}): {reason}")]
    Fault {
        index: usize,
        label: String,
        reason: String,
    },
}

/// Precomputed response parts of a status fault.
struct StatusParts {
    status: StatusCode,
    retry_after: Option<HeaderValue>,
    retry_after_ms: Option<HeaderValue>,
    should_retry: Option<HeaderValue>,
    error_type: Option<HeaderValue>,
}

/// The fault timeline in force and the instant its windows are relative to (the run's
/// epoch; for the standalone proxy, the moment it started).
pub(crate) struct Armed {
    pub(crate) faults: Arc<ArmedFaults>,
    pub(crate) epoch: Instant,
}

/// A fault timeline with the answers of its status faults built once: they change only
/// when the faults do (the standalone proxy's control API replaces the whole set).
pub(crate) struct ArmedFaults {
    pub(crate) timeline: FaultTimeline,
    /// Indexed like the faults; `Some` for status faults.
    status_parts: Vec<Option<StatusParts>>,
    /// Requests each fault decided (indexed like the faults; latency faults, which only
    /// delay, are not counted). Shared with the control API, which keeps them per fault id.
    hits: Vec<Arc<AtomicU64>>,
}

impl ArmedFaults {
    /// Checks what the server must build from each fault (a status code, header values).
    pub(crate) fn new(faults: Vec<Fault>, seed: u64) -> Result<Self, TargetError> {
        let hits = faults.iter().map(|_| Arc::default()).collect();
        Self::with_hits(faults, hits, seed)
    }

    /// [`ArmedFaults::new`] counting into `hits` (one per fault, in order).
    pub(crate) fn with_hits(
        faults: Vec<Fault>,
        hits: Vec<Arc<AtomicU64>>,
        seed: u64,
    ) -> Result<Self, TargetError> {
        debug_assert_eq!(faults.len(), hits.len());
        let mut status_parts = Vec::with_capacity(faults.len());
        for (index, f) in faults.iter().enumerate() {
            let err = |reason: String| TargetError::Fault {
                index,
                label: f.kind.label(),
                reason,
            };
            let code = |s: u16| {
                StatusCode::from_u16(s).map_err(|_| err(format!("{s} is not an HTTP status code")))
            };
            if let FaultKind::LostResponse { status: Some(s) } = &f.kind {
                code(*s)?;
            }
            status_parts.push(match &f.kind {
                FaultKind::Status {
                    status,
                    retry_after,
                    retry_after_ms,
                    should_retry,
                    error_code,
                } => {
                    Some(StatusParts {
                        status: code(*status)?,
                        // Whole seconds (RFC 9110 delay-seconds), rounded up so a client never
                        // comes back earlier than the fault asked.
                        retry_after: retry_after.map(|d| {
                            let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
                            HeaderValue::from(s)
                        }),
                        // Whole milliseconds, rounded up likewise.
                        retry_after_ms: retry_after_ms.map(|d| {
                            let up = u128::from(d.subsec_nanos() % 1_000_000 > 0);
                            HeaderValue::from_str(&(d.as_millis() + up).to_string())
                                .expect("digits are a header value")
                        }),
                        should_retry: should_retry
                            .map(|b| HeaderValue::from_static(if b { "true" } else { "false" })),
                        error_type: match error_code {
                            Some(c) => Some(HeaderValue::from_str(c).map_err(|_| {
                                err(format!("error_code {c:?} is not a header value"))
                            })?),
                            None => None,
                        },
                    })
                }
                _ => None,
            });
        }
        Ok(ArmedFaults {
            timeline: FaultTimeline::new(faults, seed),
            status_parts,
            hits,
        })
    }

    /// Counts one request decided by fault `fault`.
    fn hit(&self, fault: Option<usize>) {
        if let Some(h) = fault.and_then(|f| self.hits.get(f)) {
            h.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn status_parts(&self, fault: Option<usize>) -> Option<&StatusParts> {
        fault.and_then(|f| self.status_parts.get(f).and_then(Option::as_ref))
    }
}

/// What the target needs to know of a load's request classes: how to draw an arrival's
/// class from its id, and whether each class's calls have a side effect to count.
pub struct ArrivalClasses {
    pub mix: crate::scenario::classes::ClassMix,
    pub seed: u64,
    pub writes: Vec<bool>,
}

pub(crate) struct Shared {
    armed: Arc<RwLock<Armed>>,
    model: ServiceModel,
    counters: Counters,
    slots: Slots,
    dedup: Option<Arc<Dedup>>,
    external_ids: AtomicU64,
    shutdown: watch::Receiver<bool>,
    /// Connection and work tasks still running, and a wake-up when it reaches zero.
    tasks: AtomicUsize,
    tasks_done: Notify,
    /// Proxy mode: the real server that does the work instead of the service model.
    upstream: Option<proxy::Upstream>,
    /// Standalone proxy: the control endpoint's state.
    control: Option<proxy::Control>,
    /// The LLM-style providers under `/providers/NAME` (none for a plain service).
    providers: provider::Providers,
    /// Every arrival's request id and run time, once [`TargetHandle::log_arrivals`] asked
    /// for it: per-request counts and gaps measured where the requests land.
    arrival_log: std::sync::OnceLock<std::sync::Mutex<Vec<(u64, Duration)>>>,
    /// A load's request classes and the seed to draw each arrival's class from its id, once
    /// [`TargetHandle::count_classes`] asked for counts per class.
    classes: std::sync::OnceLock<ArrivalClasses>,
    /// Which of the load generator's attempts were read, once
    /// [`TargetHandle::claim_attempts`] asked for it (its client settles each attempt).
    claims: std::sync::OnceLock<Arc<Claims>>,
}

impl Shared {
    pub(crate) fn armed(&self) -> (Arc<ArmedFaults>, Instant) {
        let a = self.armed.read().unwrap_or_else(|e| e.into_inner());
        (a.faults.clone(), a.epoch)
    }

    pub(crate) fn arm(&self, faults: ArmedFaults, epoch: Instant) {
        let mut a = self.armed.write().unwrap_or_else(|e| e.into_inner());
        *a = Armed {
            faults: Arc::new(faults),
            epoch,
        };
    }

    /// Wakes queued waiters at every moment the capacity in force may change.
    pub(crate) fn spawn_capacity_pump(self: &Arc<Self>) {
        let (faults, epoch) = self.armed();
        let changes = faults.timeline.capacity_changes();
        if changes.is_empty() {
            return;
        }
        let shared = self.clone();
        spawn_tracked(self, async move {
            for at in changes {
                tokio::time::sleep_until(epoch + at).await;
                shared.slots.pump();
            }
        });
    }
}

/// A read-only view of a running target's counters that outlives no one: progress
/// displays hold it while the engine keeps the handle.
#[derive(Clone)]
pub struct TargetProbe(Arc<Shared>);

impl TargetProbe {
    /// Arrivals so far.
    pub fn arrivals(&self) -> u64 {
        self.0.counters.snapshot(0).arrivals
    }

    /// All the counts so far, as the run's end will read them.
    pub fn stats(&self) -> TargetStats {
        let mut s = self.0.counters.snapshot(self.0.slots.peak_serving());
        s.providers = self.0.providers.stats();
        s
    }
}

/// A running built-in target.
pub struct TargetHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    accept: Option<JoinHandle<()>>,
}

/// Binds `bind` (port 0 picks a free port), starts serving in the background and returns at
/// once. `epoch` is the run's t = 0, shared with the load generator, so that fault windows
/// and per-second series line up with the client side. Requests before the epoch count as
/// run time 0.
pub async fn start(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
) -> Result<TargetHandle, TargetError> {
    start_inner(bind, config, epoch, None, None, true, Listen::default()).await
}

/// [`start`], speaking what `listen` says.
pub async fn start_listening(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    listen: Listen,
) -> Result<TargetHandle, TargetError> {
    start_inner(bind, config, epoch, None, None, true, listen).await
}

/// [`start_listening`] with the HTTP/1.1 server in clear chosen: `H1Server::Hyper` serves
/// it with hyper's, to hold the lean connection's answers against hyper's own.
pub async fn start_listening_h1(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    listen: Listen,
    h1: H1Server,
) -> Result<TargetHandle, TargetError> {
    let role = Role { h1, ..Role::TARGET };
    start_serving(bind, config, epoch, role, listen, Vec::new(), None).await
}

/// The built-in target hosting `providers` under `/providers/NAME` besides its plain
/// service, speaking what `listen` says.
pub async fn start_with_providers(
    bind: SocketAddr,
    config: TargetConfig,
    providers: Vec<Provider>,
    epoch: Instant,
    listen: Listen,
) -> Result<TargetHandle, TargetError> {
    start_serving(bind, config, epoch, Role::TARGET, listen, providers, None).await
}

/// [`start_listening`] with room for `streams` HTTP/2 streams at once on one connection,
/// in place of hyper's default of 200 (about what common servers allow, so kept for every
/// run): for a bench that holds far more requests in flight over one connection than a
/// real server would take.
pub async fn start_listening_streams(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    listen: Listen,
    streams: u32,
) -> Result<TargetHandle, TargetError> {
    let streams = Some(streams.max(1));
    start_serving(
        bind,
        config,
        epoch,
        Role::TARGET,
        listen,
        Vec::new(),
        streams,
    )
    .await
}

/// The built-in target, the proxy (`upstream`) and the standalone proxy (`control`) share
/// this: one arrival/fault/counting path. `armed_now`: the fault timeline runs from
/// `epoch` (otherwise it starts empty, until the control endpoint starts it).
pub(crate) async fn start_inner(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    upstream: Option<proxy::Upstream>,
    control: Option<proxy::Control>,
    armed_now: bool,
    listen: Listen,
) -> Result<TargetHandle, TargetError> {
    let role = Role {
        upstream,
        control,
        armed_now,
        h1: H1Server::default(),
    };
    start_serving(bind, config, epoch, role, listen, Vec::new(), None).await
}

/// What a server is besides the built-in target: a proxy's upstream, the standalone
/// proxy's control endpoint, and whether its fault timeline runs from the epoch.
struct Role {
    upstream: Option<proxy::Upstream>,
    control: Option<proxy::Control>,
    armed_now: bool,
    h1: H1Server,
}

impl Role {
    /// The plain built-in target: no upstream, no control endpoint, faults armed at once.
    const TARGET: Role = Role {
        upstream: None,
        control: None,
        armed_now: true,
        h1: H1Server::Lean,
    };
}

/// One arrival/fault/counting path for every kind of server; only the plain built-in
/// target hosts `providers`. `streams`: HTTP/2 streams a connection may carry at once
/// (None: hyper's default).
async fn start_serving(
    bind: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    role: Role,
    listen: Listen,
    providers: Vec<Provider>,
    streams: Option<u32>,
) -> Result<TargetHandle, TargetError> {
    let Role {
        upstream,
        control,
        armed_now,
        h1,
    } = role;
    // Checked even when not armed yet: the standalone proxy arms them later.
    let loaded = ArmedFaults::new(config.faults, config.seed)?;

    let listener = TcpListener::bind(bind)
        .await
        .map_err(|source| TargetError::Bind { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| TargetError::LocalAddr { bind, source })?;

    let faults = if armed_now {
        loaded
    } else {
        ArmedFaults::new(Vec::new(), config.seed)?
    };
    let armed = Arc::new(RwLock::new(Armed {
        faults: Arc::new(faults),
        epoch,
    }));
    let base = config.model.concurrency;
    let cap_armed = armed.clone();
    let capacity = Box::new(move || {
        let a = cap_armed.read().unwrap_or_else(|e| e.into_inner());
        a.faults
            .timeline
            .capacity_at(Instant::now().saturating_duration_since(a.epoch), base)
    });
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shared = Arc::new(Shared {
        slots: Slots::new(
            capacity,
            config.model.queue,
            config.model.queue_timeout,
            &config.model.shedding,
        ),
        model: config.model,
        counters: Counters::new(epoch),
        dedup: config
            .dedup
            .filter(|d| d.enabled)
            .map(|d| Arc::new(Dedup::new(d.retention))),
        external_ids: AtomicU64::new(EXTERNAL_REQUEST_BASE),
        shutdown: shutdown_rx,
        tasks: AtomicUsize::new(0),
        tasks_done: Notify::new(),
        armed,
        upstream,
        control: control.map(|c| c.bound_to(addr)),
        providers: provider::Providers::new(providers),
        arrival_log: std::sync::OnceLock::new(),
        classes: std::sync::OnceLock::new(),
        claims: std::sync::OnceLock::new(),
    });

    // Waiters queued while capacity is low get their slots when it grows back, even if no
    // request finishes at that moment.
    shared.spawn_capacity_pump();

    let accept = tokio::spawn(accept_loop(listener, shared.clone(), listen, streams, h1));
    Ok(TargetHandle {
        addr,
        shared,
        shutdown: shutdown_tx,
        accept: Some(accept),
    })
}

impl TargetHandle {
    /// From now on, keeps every arrival's request id (`x-stormrig-request`, else the
    /// target's own numbering) and run time, for [`TargetHandle::arrivals_logged`].
    pub fn log_arrivals(&self) {
        let _ = self.shared.arrival_log.set(Default::default());
    }

    /// From now on, counts every arrival under its request class as well: the class the
    /// load generator drew for its request id (`x-stormrig-request`) from `seed`.
    /// A class's `writes` says whether the target counts its executions, in place of the
    /// method.
    pub fn count_classes(&self, classes: ArrivalClasses) {
        let _ = self.shared.classes.set(classes);
    }

    /// From now on, settles every announced attempt with its client ([`Claims`]): an
    /// attempt the client gave up on before this server read it is never counted here, and
    /// the client labels it `not-accepted`. For the one client that talks to this server
    /// directly.
    pub fn claim_attempts(&self) -> Arc<Claims> {
        Arc::clone(self.shared.claims.get_or_init(Default::default))
    }

    /// The arrivals kept since [`TargetHandle::log_arrivals`], in arrival order.
    pub fn arrivals_logged(&self) -> Vec<(u64, Duration)> {
        self.shared.arrival_log.get().map_or_else(Vec::new, |l| {
            l.lock().unwrap_or_else(|p| p.into_inner()).clone()
        })
    }

    /// The address the target listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of the counts so far (callable during the run).
    pub fn stats(&self) -> TargetStats {
        self.probe().stats()
    }

    /// Requests in flight right now.
    pub fn in_flight(&self) -> u64 {
        self.shared.counters.in_flight()
    }

    /// A cheap, cloneable view of the counters, for progress displays.
    pub fn probe(&self) -> TargetProbe {
        TargetProbe(Arc::clone(&self.shared))
    }

    /// Stops accepting, closes every connection (requests in flight are dropped without an
    /// answer), stops queued and running work, and returns the final counts.
    pub async fn shutdown(mut self) -> TargetStats {
        let _ = self.shutdown.send(true);
        if let Some(accept) = self.accept.take() {
            let _ = accept.await;
        }
        // Every task watches the shutdown signal; wait (bounded) until they have all ended so
        // that the final counts are final.
        let wait = async {
            loop {
                let notified = self.shared.tasks_done.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.shared.tasks.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
        self.stats()
    }
}

impl Drop for TargetHandle {
    fn drop(&mut self) {
        // A handle dropped without `shutdown` still stops the server.
        let _ = self.shutdown.send(true);
    }
}

/// Completes when shutdown has been signalled.
pub(crate) async fn shutdown_signal(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

struct TaskGuard(Arc<Shared>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0.tasks.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.tasks_done.notify_waiters();
        }
    }
}

/// Spawns `fut`, counted in `tasks` and cut short at shutdown.
pub(crate) fn spawn_tracked<F>(shared: &Arc<Shared>, fut: F) -> JoinHandle<Option<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    shared.tasks.fetch_add(1, Ordering::SeqCst);
    let guard = TaskGuard(shared.clone());
    let stop = shutdown_signal(shared.shutdown.clone());
    tokio::spawn(async move {
        let _guard = guard;
        tokio::select! {
            // The task's own work first: the shutdown signal is polled only while it waits.
            biased;
            out = fut => Some(out),
            _ = stop => None,
        }
    })
}

/// The next connection on `listener`, for every accept loop of the project (the target and
/// proxy, the layers, the metrics listener). An accept error (out of file descriptors, a
/// connection reset while queued) is retried after a short pause rather than spun on.
/// Cancel-safe: a loop may drop it in a `select!` when it is told to stop.
pub(crate) async fn next_connection(listener: &TcpListener) -> tokio::net::TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return stream,
            Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    listen: Listen,
    streams: Option<u32>,
    h1: H1Server,
) {
    let acceptor = listen.tls.map(tokio_rustls::TlsAcceptor::from);
    let stop = shutdown_signal(shared.shutdown.clone());
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            stream = next_connection(&listener) => stream,
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let conn_shared = shared.clone();
        let acceptor = acceptor.clone();
        let protocol = listen.protocol;
        spawn_tracked(&shared, async move {
            let hold = CloseHold::default();
            if acceptor.is_none() && !protocol.is_h2() && h1 == H1Server::Lean {
                return lean::serve(stream, conn_shared, hold).await;
            }
            let svc_hold = hold.clone();
            let svc = service_fn(move |req: Request<Incoming>| {
                let req = req.map(body::ReqBody::Hyper);
                serve_request(conn_shared.clone(), req, svc_hold.clone(), protocol.is_h2())
            });
            match acceptor {
                None => {
                    // Boxed: the lean connection serves HTTP/1.1 in clear unless told
                    // otherwise, and a task's size is its largest state.
                    Box::pin(serve_connection(
                        protocol,
                        streams,
                        HeldClose::new(stream, hold),
                        svc,
                    ))
                    .await
                }
                Some(acceptor) => {
                    // Boxed, as the HTTP/2 connection below: a task's size is its largest
                    // state, and every connection in clear would otherwise carry room for
                    // a TLS session it does not have (kilobytes per hanging request).
                    Box::pin(async move {
                        let handshake =
                            tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                        // A failed handshake carried no request: nothing to count or answer.
                        if let Ok(Ok(tls)) = handshake.await {
                            serve_connection(protocol, streams, HeldClose::new(tls, hold), svc)
                                .await;
                        }
                    })
                    .await
                }
            }
        });
    }
}

/// Serves one accepted connection until it closes; over HTTP/2 with at most `streams`
/// streams at once when given.
async fn serve_connection<S, Svc>(protocol: Protocol, streams: Option<u32>, stream: S, svc: Svc)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    Svc: hyper::service::Service<
            Request<Incoming>,
            Response = Response<Delivered>,
            Error = CloseConnection,
        > + Send
        + 'static,
    Svc::Future: Send + 'static,
{
    let io = TokioIo::new(stream);
    if protocol.is_h2() {
        let mut builder = http2::Builder::new(TokioExecutor::new());
        if let Some(n) = streams {
            builder.max_concurrent_streams(n);
        }
        // Boxed: an HTTP/2 connection's state is kilobytes that an HTTP/1.1 connection's
        // task would otherwise reserve too.
        let _ = Box::pin(builder.serve_connection(io, svc)).await;
    } else {
        let _ = http1::Builder::new()
            .keep_alive(true)
            // Answers are a head and a few bytes of body: one flattened write per
            // response instead of a writev of two buffers (about 5 % less server CPU
            // per request in a wrk run, within the noise of this machine).
            .writev(false)
            .serve_connection(io, svc)
            .await;
    }
}

/// Returned from the service fn to make hyper close the connection without an answer (over
/// HTTP/2: reset the request's stream).
#[derive(Debug)]
pub(crate) struct CloseConnection {
    why: &'static str,
    /// The RST_STREAM code over HTTP/2: hyper's server resets the stream with the code of the
    /// first `h2::Error` in the service error's sources (`Error::h2_reason` in hyper-1.12.0
    /// `src/error.rs` line 353), INTERNAL_ERROR when there is none.
    code: Option<h2::Error>,
}

impl CloseConnection {
    pub(crate) fn because(why: &'static str) -> Self {
        CloseConnection { why, code: None }
    }

    /// Closes (HTTP/1.1) or resets the stream with `code` (HTTP/2).
    pub(crate) fn with_code(why: &'static str, code: Option<h2::Reason>) -> Self {
        CloseConnection {
            why,
            code: code.map(h2::Error::from),
        }
    }
}

impl std::fmt::Display for CloseConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.why)
    }
}

impl std::error::Error for CloseConnection {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.code
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

pub(crate) type Resp = Response<Full<Bytes>>;

/// Takes the request out of flight when the service future ends or is dropped.
struct InFlight<'a>(&'a Counters);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

fn parse_u64(v: Option<&HeaderValue>) -> Option<u64> {
    crate::headers::parse_u64(v?.as_bytes())
}
