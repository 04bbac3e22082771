//! Drives one logical request through a retry config on real sockets: send the attempts the
//! config's [`Session`] grants, hand it each reply, wait or stop as it says. The driver makes
//! no retry decision and counts nothing of its own; it only carries the session's steps out
//! over HTTP. A hedged call, whose copies are in flight at once, is carried by `hedged`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Uri};

use super::clock::Epoch;
use super::http::{self, HttpClient, Outgoing, Reply, ReplyHeader, Stamp};
use crate::draws::{request_seed, LazyRng};
use crate::headers;
use crate::policy::failover::path_at;
use crate::policy::{
    is_idempotent_method, AttemptLabel, AttemptOutcome, GiveUpReason, Response, TransportError,
};
use crate::server::{Claims, Settled};
use crate::session::{self, Attempt, Next, Session};

mod hedged;

/// Everything one config's requests share.
pub struct ConfigRuntime {
    /// Keys this client's jitter draws ([`crate::draws::config_key`]).
    pub draw_key: u64,
    pub name: String,
    /// The config's client, recorder and attempt log, behind one lock.
    session: Mutex<Session>,
    pub http: HttpClient,
    /// `http://127.0.0.1:PORT` of the next hop.
    pub base_uri: String,
    pub in_flight: AtomicU64,
    pub max_in_flight: u64,
    pub seed: u64,
    /// Pass the remaining deadline downstream in `x-stormrig-deadline-ms`.
    pub propagate_deadline: bool,
    /// The first path sent and its origin-form URI on this hop.
    uri_cache: OnceLock<(String, Uri)>,
    /// Which provider each attempt goes to: the policy's answer rewrites the template path.
    /// Per request class (the policy it runs under); one entry without classes.
    failover: Vec<Option<crate::policy::FailoverConfig>>,
    /// Per request class, the providers of its ladder's model rungs, by rung index (`None`
    /// for a rung the client answers itself).
    fallbacks: Vec<Vec<Option<String>>>,
    /// `x-stormrig-config` and `x-stormrig-run` of every attempt (the load generator's
    /// clients; a layer passes on those it received).
    trace: Option<(HeaderValue, HeaderValue)>,
    /// The claims of the in-process server this client talks to directly: whether it read
    /// each attempt, so one it never read is `not-accepted` ([`crate::server::Claims`]).
    claims: Option<Arc<Claims>>,
}

/// What every attempt of a config says about where it comes from.
#[derive(Debug, Clone, Copy)]
pub struct Trace<'a> {
    /// The compared config's name.
    pub config: &'a str,
    /// The run's id.
    pub run: &'a str,
}

/// The request every logical request sends.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// A gRPC unary call: `grpc-timeout` goes with each attempt and the reply is read by
    /// its `grpc-status` ([`super::grpc`]).
    pub grpc: bool,
    /// The request class it sends, for a load with classes (the session counts per class
    /// and runs the class's own policy).
    pub class: Option<usize>,
    /// The class, when it draws a token count per request: each request then carries its
    /// own `x-stormrig-*-tokens` headers.
    pub tokens: Option<std::sync::Arc<crate::scenario::classes::RequestClass>>,
}

/// Every request class's template and the mix that picks one per request id.
#[derive(Debug, Clone)]
pub struct RequestMix {
    templates: Vec<RequestTemplate>,
    mix: crate::scenario::classes::ClassMix,
    seed: u64,
}

impl RequestMix {
    /// One template for every request (a load without classes, a benchmark).
    pub fn single(tmpl: RequestTemplate) -> RequestMix {
        RequestMix {
            templates: vec![tmpl],
            mix: crate::scenario::classes::ClassMix::new(&[]),
            seed: 0,
        }
    }

    /// One template per class, picked per request by `mix` (seeded, or a trace's own).
    pub fn classes(
        templates: Vec<RequestTemplate>,
        mix: crate::scenario::classes::ClassMix,
        seed: u64,
    ) -> RequestMix {
        RequestMix {
            templates,
            mix,
            seed,
        }
    }

    /// The template request `id` sends.
    #[inline]
    pub fn pick(&self, id: u64) -> &RequestTemplate {
        &self.templates[self.mix.class_of(self.seed, id)]
    }
}

/// How a logical request ended.
#[derive(Debug)]
pub struct Final {
    pub ok: bool,
    /// The last attempt's reply (None when no attempt was sent).
    pub reply: Option<Reply>,
    pub reason: Option<GiveUpReason>,
}

/// What a [`ConfigRuntime`] is built from.
#[derive(Debug, Clone)]
pub struct RuntimeSpec<'a> {
    /// Distinct per (config, layer) and keyed by their names ([`crate::draws::config_key`],
    /// [`crate::draws::layer_key`]): it salts the per-request RNG.
    pub draw_key: u64,
    pub name: &'a str,
    pub config: &'a crate::policy::RetryConfig,
    /// Client instances of the config, each with its own policy state (1 for a layer).
    pub clients: std::num::NonZeroU32,
    pub base_uri: String,
    pub max_in_flight: u64,
    /// Bound of the connection pool to the next hop (None: unbounded).
    pub max_connections: Option<usize>,
    pub seed: u64,
    pub propagate_deadline: bool,
    pub attempt_log: bool,
    /// What is spoken to the next hop (HTTP version, TLS).
    pub wire: http::Dialer,
    pub trace: Option<Trace<'a>>,
    /// The load's request classes and each one's own policy (both empty without classes,
    /// and for a layer, which relays what arrives).
    pub classes: &'a [crate::scenario::classes::RequestClass],
    pub class_policies: &'a [Option<crate::policy::RetryConfig>],
}

impl ConfigRuntime {
    /// A fresh runtime: a new policy client, an empty recorder, its own connection pool.
    pub fn new(spec: RuntimeSpec<'_>) -> ConfigRuntime {
        let failover = policies(&spec).map(|p| p.failover.clone()).collect();
        let fallbacks = policies(&spec)
            .map(|p| {
                p.ladder
                    .iter()
                    .map(|r| r.model().map(str::to_string))
                    .collect()
            })
            .collect();
        ConfigRuntime {
            draw_key: spec.draw_key,
            name: spec.name.to_string(),
            session: Mutex::new({
                let s = Session::fleet(spec.name, spec.config, spec.clients, spec.attempt_log)
                    .seeded(spec.seed, spec.draw_key);
                match spec.classes.is_empty() {
                    true => s,
                    false => s.with_classes(
                        spec.class_policies,
                        spec.classes.iter().map(|c| c.idempotent()),
                    ),
                }
            }),
            http: match spec.max_connections {
                Some(n) => super::http::client(&spec.base_uri).with_max_connections(n),
                None => super::http::client(&spec.base_uri),
            }
            .with_wire(spec.wire),
            base_uri: spec.base_uri,
            in_flight: AtomicU64::new(0),
            max_in_flight: spec.max_in_flight,
            seed: spec.seed,
            propagate_deadline: spec.propagate_deadline,
            uri_cache: OnceLock::new(),
            failover,
            fallbacks,
            // Names and ids are validated tokens: a value that is not a header is left off.
            trace: spec.trace.and_then(|t| {
                Some((
                    HeaderValue::from_str(t.config).ok()?,
                    HeaderValue::from_str(t.run).ok()?,
                ))
            }),
            claims: None,
        }
    }

    /// Settles every attempt with the in-process server this client talks to directly
    /// ([`crate::server::TargetHandle::claim_attempts`]).
    pub fn with_claims(mut self, claims: Arc<Claims>) -> ConfigRuntime {
        self.claims = Some(claims);
        self
    }

    /// Whether the server never read attempt `attempt` of `request`, which ended as
    /// `reply` (settled with the server when this client holds its claims).
    fn never_read(&self, request: u64, attempt: u32, reply: &Reply) -> bool {
        let Some(claims) = &self.claims else {
            return false;
        };
        match reply {
            // The client's own socket failed: no bytes of it can ever reach the server, and
            // it keeps its own label.
            Reply::Failed(TransportError::LocalResource) => {
                claims.settle(request, attempt, false);
                false
            }
            Reply::Failed(_) => claims.settle(request, attempt, true) == Settled::NeverRead,
            Reply::Response { .. } => {
                claims.settle(request, attempt, false);
                false
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Session> {
        // A panic while holding the lock would already have failed the run; keep counting.
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one logical request from its intended start to its end.
    ///
    /// The session is locked once per attempt on the hot path: the start of the request
    /// shares its section with the first permit, each outcome with the next permit (when the
    /// retry needs no wait) or with the end of the request.
    pub async fn drive(
        &self,
        epoch: &Epoch,
        tmpl: &RequestTemplate,
        request: u64,
        intended: Duration,
        inherited_deadline: Option<Duration>,
    ) -> Final {
        let mut rng = LazyRng::new(request_seed(self.seed, self.draw_key, request));
        // The clock is read once per step: the instant a step was decided at is the one the
        // attempt it grants is sent at, and the instant its reply came is the one the next
        // decision is taken at.
        let mut now;
        let mut hedged = false;
        // The request stays in the guard's slot between its steps, and the session drives it
        // there (no copy of it in and out at every step).
        let mut held = Held::new(self, epoch);
        let mut next = {
            let mut session = self.lock();
            now = epoch.now();
            let next = match tmpl.class {
                Some(class) => session.start_class_in(
                    &mut held.req,
                    now,
                    intended,
                    request,
                    class,
                    inherited_deadline,
                ),
                None => session.start_in(
                    &mut held.req,
                    now,
                    intended,
                    request,
                    is_idempotent_method(tmpl.method.as_str()),
                    inherited_deadline,
                ),
            };
            if let (Next::Send(_), Some(req)) = (&next, &held.req) {
                hedged = session.hedges(req);
            }
            next
        };
        if let (true, Next::Send(attempt)) = (hedged, &next) {
            let attempt = *attempt;
            let req = held
                .req
                .take()
                .expect("a request about to be sent is in its slot");
            // Boxed: a retried request's future stays the size it was.
            return Box::pin(self.drive_hedged(
                epoch,
                tmpl,
                request,
                (req, attempt),
                now,
                &mut rng,
            ))
            .await;
        }
        let mut last: Option<Reply> = None;
        loop {
            next = match next {
                Next::Send(attempt) => {
                    if let Some(claims) = &self.claims {
                        claims.sent(request, attempt.number);
                    }
                    held.wire = Some((request, attempt.number, now.mono));
                    let sent_at = now.mono;
                    let reply = http::send(
                        &self.http,
                        self.build(tmpl, request, attempt),
                        attempt.timeout,
                    )
                    .await;
                    now = epoch.now();
                    held.wire = None;
                    let latency = now.mono.saturating_sub(sent_at);
                    let outcome = if tmpl.grpc {
                        super::grpc::to_outcome(&reply)
                    } else {
                        to_outcome(&reply)
                    };
                    let label = self
                        .never_read(request, attempt.number, &reply)
                        .then_some(AttemptLabel::NotAccepted);
                    let next = self.lock().outcome_as_in(
                        now,
                        &mut held.req,
                        latency,
                        &outcome,
                        &mut rng,
                        label,
                    );
                    last = Some(reply);
                    next
                }
                Next::Wait(after) => {
                    tokio::time::sleep(after).await;
                    let mut session = self.lock();
                    now = epoch.now();
                    session.permit_in(now, &mut held.req)
                }
                Next::Done(ending) => {
                    let reason = ending.reason();
                    return Final {
                        ok: reason.is_none(),
                        reply: last,
                        reason,
                    };
                }
            };
        }
    }

    /// The URI of `path` on this config's next hop (`base_uri` + `path`), parsed once per
    /// template path: origin-form as the HTTP/1.1 request line carries it, absolute over
    /// HTTP/2, whose `:scheme` and `:authority` come from it.
    fn origin_uri(&self, path: &str) -> Uri {
        if let Some((p, uri)) = self.uri_cache.get() {
            if p == path {
                return uri.clone();
            }
        }
        let full = format!("{}{}", self.base_uri, path);
        let full = full
            .parse::<Uri>()
            .expect("method, uri and headers were validated");
        let uri = match full.path_and_query() {
            _ if self.http.speaks_h2() => full,
            Some(pq) => Uri::from(pq.clone()),
            None => Uri::from_static("/"),
        };
        let _ = self.uri_cache.set((path.to_string(), uri.clone()));
        uri
    }

    fn build<'a>(
        &'a self,
        tmpl: &'a RequestTemplate,
        request: u64,
        attempt: Attempt,
    ) -> Outgoing<'a> {
        let (prompt_tokens, completion_tokens) = match &tmpl.tokens {
            Some(class) => class.tokens(self.seed, request),
            None => (None, None),
        };
        let stamp = Stamp {
            request,
            attempt: attempt.number,
            trace: self.trace.as_ref().map(|(config, run)| (config, run)),
            deadline_ms: match (self.propagate_deadline, attempt.remaining_deadline) {
                (true, Some(rem)) => Some(rem.as_millis() as u64),
                _ => None,
            },
            // The call's deadline as gRPC carries it: what remains of it, else the try's.
            grpc_timeout: match tmpl.grpc {
                true => attempt
                    .remaining_deadline
                    .or(attempt.timeout)
                    .map(super::grpc::timeout_header),
                false => None,
            },
            prompt_tokens,
            completion_tokens,
            idempotency_key: match attempt.idempotency_key {
                true => HeaderValue::from_str(&format!("{}-{request}", self.name)).ok(),
                false => None,
            },
        };
        let class = tmpl.class.unwrap_or(0);
        let model = attempt
            .fallback
            .and_then(|r| self.fallbacks[class].get(usize::from(r))?.as_deref());
        let uri = match (&self.failover[class], model) {
            (_, Some(name)) => self.origin_uri(&path_at(&tmpl.path, name)),
            (Some(f), None) => {
                self.origin_uri(&f.path_to(&tmpl.path, attempt.provider.unwrap_or(0)))
            }
            (None, None) => self.origin_uri(&tmpl.path),
        };
        Outgoing {
            method: &tmpl.method,
            uri,
            headers: &tmpl.headers,
            host: self.http.host(),
            stamp,
            body: &tmpl.body,
        }
    }

    /// Counts one logical request as started and tries to claim an in-flight slot.
    pub fn try_claim(&self) -> bool {
        let prev = self.in_flight.fetch_add(1, Ordering::AcqRel);
        if prev >= self.max_in_flight {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            false
        } else {
            true
        }
    }

    pub fn release(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// Counts an arrival dropped by the in-flight cap.
    pub fn dropped(&self, t: Duration) {
        self.lock().dropped(t);
    }

    /// Runs `f` on the session (for snapshots and the end of the run).
    pub fn with<R>(&self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(&mut self.lock())
    }
}

/// The policy each request class runs under, in class order (the config's alone without
/// classes).
fn policies<'a>(
    spec: &'a RuntimeSpec<'a>,
) -> impl Iterator<Item = &'a crate::policy::RetryConfig> + 'a {
    let n = spec.classes.len().max(1);
    (0..n).map(move |i| {
        spec.class_policies
            .get(i)
            .and_then(Option::as_ref)
            .unwrap_or(spec.config)
    })
}

/// The slot of a request between two steps of [`ConfigRuntime::drive`], while an attempt is
/// on the wire or a retry waits. If the drive is dropped there (the run's drain ended, a
/// layer whose caller closed the connection), the guard hands the request back to the
/// session to be abandoned, so the policy releases what it held (retry slot, breaker probe,
/// active-request count), and the attempt on the wire gets its outcome: `unfinished`, or
/// `not-accepted` when the server never read it. The session empties the slot when the
/// request ends, which disarms the guard.
struct Held<'a> {
    rt: &'a ConfigRuntime,
    epoch: &'a Epoch,
    req: Option<session::Request>,
    /// The attempt on the wire: request id, attempt number, when it was sent.
    wire: Option<(u64, u32, Duration)>,
}

impl<'a> Held<'a> {
    fn new(rt: &'a ConfigRuntime, epoch: &'a Epoch) -> Self {
        Held {
            rt,
            epoch,
            req: None,
            wire: None,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let Some(req) = self.req.take() else {
            return;
        };
        let now = self.epoch.now();
        match self.wire {
            Some((request, attempt, sent)) => {
                let unread = self
                    .rt
                    .claims
                    .as_ref()
                    .is_some_and(|c| c.settle(request, attempt, true) == Settled::NeverRead);
                let label = match unread {
                    true => AttemptLabel::NotAccepted,
                    false => AttemptLabel::Unfinished,
                };
                self.rt
                    .lock()
                    .abandon_on_wire(now, req, attempt, sent, label);
            }
            None => self.rt.lock().abandon(now, req),
        }
    }
}

/// The policy's view of a reply. A gateway answer from stormrig's own fault proxy that
/// says the real server was never reached is what it stands for: a failed connect, or a
/// failed TLS handshake.
pub fn to_outcome(reply: &Reply) -> AttemptOutcome<'_> {
    match reply {
        Reply::Response { status, .. } if !Response::headers_matter(*status) => {
            AttemptOutcome::Response(Response::status(*status))
        }
        Reply::Response { .. }
            if reply.header(ReplyHeader::Upstream) == Some(headers::UPSTREAM_CONNECT_FAILED) =>
        {
            AttemptOutcome::Transport(crate::policy::TransportError::ConnectRefused)
        }
        Reply::Response { .. }
            if reply.header(ReplyHeader::Upstream) == Some(headers::UPSTREAM_TLS_HANDSHAKE) =>
        {
            AttemptOutcome::Transport(crate::policy::TransportError::TlsHandshake)
        }
        Reply::Response { status, .. } => AttemptOutcome::Response(Response {
            status: *status,
            retry_after: reply.header(ReplyHeader::RetryAfter),
            retry_after_ms: reply.header(ReplyHeader::RetryAfterMs),
            should_retry: reply.header(ReplyHeader::ShouldRetry),
            amz_retry_after: reply.header(ReplyHeader::AmzRetryAfter),
            grpc_pushback_ms: reply.header(ReplyHeader::GrpcPushbackMs),
            error_code: reply.header(ReplyHeader::ErrorType),
            grpc_status: None,
        }),
        Reply::Failed(e) => AttemptOutcome::Transport(*e),
    }
}
