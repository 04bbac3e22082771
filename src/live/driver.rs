//! Drives one logical request through a retry config on real sockets: ask the policy, send,
//! tell the policy what happened, wait or stop as it says. The driver makes no retry
//! decision of its own; it only carries them out and counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderValue, HOST};
use hyper::{Method, Request, Uri};

use super::clock::Epoch;
use super::http::{self, HttpClient, Reply};
use crate::metrics::{AttemptRow, Recorder};
use crate::policy::{
    AttemptOutcome, BreakerState, Decision, GiveUpReason, Now, Permit, PolicyEvent, RequestState,
    Response, RetryClient,
};
use crate::server::headers;

// Engine-neutral helpers live in `metrics::engine` so the simulator shares them exactly.
pub use crate::metrics::engine::{
    breaker_level, record_decision, record_permit, request_seed, LazyRng,
};

/// A config's mutable state, behind one lock: the policy's shared state (budget, breaker)
/// and the recorder change together, so counts and decisions can never disagree.
pub struct Shared {
    pub client: RetryClient,
    pub rec: Recorder,
    pub log: Option<Vec<AttemptRow>>,
}

/// Everything one config's requests share.
pub struct ConfigRuntime {
    pub index: usize,
    pub name: String,
    pub shared: Mutex<Shared>,
    pub http: HttpClient,
    /// `http://127.0.0.1:PORT` of the next hop.
    pub base_uri: String,
    pub in_flight: AtomicU64,
    pub max_in_flight: u64,
    pub seed: u64,
    /// Pass the remaining deadline downstream in `x-stormrig-deadline-ms`.
    pub propagate_deadline: bool,
    /// Attempts sent with their per-try timeout cut short by the deadline (they may end by
    /// timing out at the deadline, never after it).
    pub deadline_cut: AtomicU64,
    /// The last template path and its origin-form URI on this hop.
    uri_cache: OnceLock<(String, Uri)>,
}

/// The request every logical request sends.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
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
    /// Distinct per (config, layer): it salts the per-request RNG.
    pub index: usize,
    pub name: &'a str,
    pub config: &'a crate::policy::RetryConfig,
    pub base_uri: String,
    pub max_in_flight: u64,
    /// Bound of the connection pool to the next hop (None: unbounded).
    pub max_connections: Option<usize>,
    pub seed: u64,
    pub propagate_deadline: bool,
    pub attempt_log: bool,
}

impl ConfigRuntime {
    /// A fresh runtime: a new policy client, an empty recorder, its own connection pool.
    pub fn new(spec: RuntimeSpec<'_>) -> ConfigRuntime {
        ConfigRuntime {
            index: spec.index,
            name: spec.name.to_string(),
            shared: Mutex::new(Shared {
                client: RetryClient::new(spec.config),
                rec: Recorder::new(),
                log: spec.attempt_log.then(Vec::new),
            }),
            http: match spec.max_connections {
                Some(n) => super::http::client(&spec.base_uri).with_max_connections(n),
                None => super::http::client(&spec.base_uri),
            },
            base_uri: spec.base_uri,
            in_flight: AtomicU64::new(0),
            max_in_flight: spec.max_in_flight,
            seed: spec.seed,
            propagate_deadline: spec.propagate_deadline,
            deadline_cut: AtomicU64::new(0),
            uri_cache: OnceLock::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A panic while holding the lock would already have failed the run; keep counting.
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one logical request from its intended start to its end.
    ///
    /// The shared state is locked once per attempt on the hot path: the start of the
    /// request shares its section with the first permit, each outcome with the next permit
    /// (when the retry needs no wait) or with the end of the request.
    pub async fn drive(
        &self,
        epoch: &Epoch,
        tmpl: &RequestTemplate,
        request: u64,
        intended: Duration,
        inherited_deadline: Option<Duration>,
    ) -> Final {
        let mut rng = LazyRng::new(request_seed(self.seed, self.index, request));
        let (mut state, mut permit) = {
            let mut g = self.lock();
            g.rec.upstream_started(intended);
            let mut state = g
                .client
                .start(epoch.now(), tmpl.method.as_str(), inherited_deadline);
            let p = self.permit_locked(&mut g, epoch, &mut state, request);
            (state, p)
        };
        let mut last: Option<Reply> = None;
        loop {
            let (attempt, timeout, remaining, key) = match permit {
                Permit::Send {
                    attempt,
                    timeout,
                    remaining_deadline,
                    idempotency_key,
                } => (attempt, timeout, remaining_deadline, idempotency_key),
                Permit::Refuse(reason) => {
                    let mut g = self.lock();
                    finish_locked(&mut g, epoch.now(), state, intended, Some(reason));
                    return Final {
                        ok: false,
                        reply: last,
                        reason: Some(reason),
                    };
                }
            };
            let req = self.build(tmpl, request, attempt, remaining, key);
            let sent_at = epoch.elapsed();
            let reply = http::send(&self.http, req, timeout).await;
            let latency = epoch.elapsed().saturating_sub(sent_at);
            let wait = {
                let outcome = to_outcome(&reply);
                let mut g = self.lock();
                let now = epoch.now();
                let d = g.client.on_outcome(now, &mut state, &outcome, &mut rng);
                let Shared { client, rec, .. } = &mut *g;
                let (label, level) =
                    record_decision(rec, client, now.mono, latency, &outcome, &d, attempt);
                if let Some(log) = g.log.as_mut() {
                    log.push(AttemptRow {
                        config: self.name.clone(),
                        request,
                        attempt,
                        outcome: label,
                        budget_after: level,
                    });
                }
                drain(&mut g, now.mono);
                match d {
                    Decision::Success => {
                        finish_locked(&mut g, now, state, intended, None);
                        drop(g);
                        return Final {
                            ok: true,
                            reply: Some(reply),
                            reason: None,
                        };
                    }
                    Decision::GiveUp { reason, .. } => {
                        finish_locked(&mut g, now, state, intended, Some(reason));
                        drop(g);
                        return Final {
                            ok: false,
                            reply: Some(reply),
                            reason: Some(reason),
                        };
                    }
                    Decision::Retry { after, .. } if after.is_zero() => {
                        permit = self.permit_locked(&mut g, epoch, &mut state, request);
                        None
                    }
                    Decision::Retry { after, .. } => Some(after),
                }
            };
            last = Some(reply);
            if let Some(after) = wait {
                tokio::time::sleep(after).await;
                let mut g = self.lock();
                permit = self.permit_locked(&mut g, epoch, &mut state, request);
            }
        }
    }

    /// Asks the policy for the next attempt and counts what it said (lock held).
    fn permit_locked(
        &self,
        g: &mut Shared,
        epoch: &Epoch,
        state: &mut RequestState,
        request: u64,
    ) -> Permit {
        let now = epoch.now();
        let p = g.client.before_attempt(now, state);
        let Shared { client, rec, .. } = &mut *g;
        if record_permit(rec, client, now.mono, &p) {
            self.deadline_cut.fetch_add(1, Ordering::Relaxed);
        }
        if let Permit::Refuse(_) = p {
            note_refusal(g, &self.name, request, state.attempts() + 1);
        }
        drain(g, now.mono);
        p
    }

    /// The origin-form URI of `path` on this config's next hop (`base_uri` + `path`, as the
    /// request line carries it), parsed once per template path.
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
            Some(pq) => Uri::from(pq.clone()),
            None => Uri::from_static("/"),
        };
        let _ = self.uri_cache.set((path.to_string(), uri.clone()));
        uri
    }

    fn build(
        &self,
        tmpl: &RequestTemplate,
        request: u64,
        attempt: u32,
        remaining: Option<Duration>,
        key: bool,
    ) -> Request<Full<Bytes>> {
        let mut h = HeaderMap::with_capacity(tmpl.headers.len() + 5);
        for (name, value) in &tmpl.headers {
            h.append(name.clone(), value.clone());
        }
        if !h.contains_key(HOST) {
            h.insert(HOST, self.http.host().clone());
        }
        h.insert(crate::server::H_REQUEST, HeaderValue::from(request));
        h.insert(crate::server::H_ATTEMPT, HeaderValue::from(attempt));
        if let (true, Some(rem)) = (self.propagate_deadline, remaining) {
            h.insert(
                crate::server::H_DEADLINE_MS,
                HeaderValue::from(rem.as_millis() as u64),
            );
        }
        if key {
            let v = format!("{}-{request}", self.name);
            if let Ok(v) = HeaderValue::from_str(&v) {
                h.insert(crate::server::H_IDEMPOTENCY_KEY, v);
            }
        }
        let mut req = Request::new(Full::new(tmpl.body.clone()));
        *req.method_mut() = tmpl.method.clone();
        *req.uri_mut() = self.origin_uri(&tmpl.path);
        *req.headers_mut() = h;
        req
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
        self.lock().rec.dropped(t);
    }

    /// Runs `f` on the shared state (for snapshots and the end of the run).
    pub fn with<R>(&self, f: impl FnOnce(&mut Shared) -> R) -> R {
        f(&mut self.lock())
    }
}

/// Ends a logical request: the policy's bookkeeping and the recorder (lock held).
fn finish_locked(
    g: &mut Shared,
    now: Now,
    state: RequestState,
    intended: Duration,
    reason: Option<GiveUpReason>,
) {
    let attempts = state.attempts();
    g.client.finish(now, state);
    g.rec.upstream_finished(
        now.mono,
        now.mono.saturating_sub(intended),
        reason,
        attempts,
    );
}

fn note_refusal(g: &mut Shared, config: &str, request: u64, attempt: u32) {
    let level = g.client.budget_level();
    if let Some(log) = g.log.as_mut() {
        log.push(AttemptRow {
            config: config.to_string(),
            request,
            attempt,
            outcome: "refused",
            budget_after: level,
        });
    }
}

fn drain(g: &mut Shared, _t: Duration) {
    for e in g.client.drain_events() {
        if let PolicyEvent::Breaker {
            to: BreakerState::Open,
            ..
        } = e
        {
            g.rec.breaker_opened();
        }
    }
}

/// The policy's view of a reply. A gateway answer from stormrig's own fault proxy that
/// says the real server was never reached is what it stands for: a failed connect.
pub fn to_outcome(reply: &Reply) -> AttemptOutcome<'_> {
    match reply {
        Reply::Response { status, .. } if !Response::headers_matter(*status) => {
            AttemptOutcome::Response(Response::status(*status))
        }
        Reply::Response { .. }
            if reply.header(headers::UPSTREAM) == Some(headers::UPSTREAM_CONNECT_FAILED) =>
        {
            AttemptOutcome::Transport(crate::policy::TransportError::ConnectRefused)
        }
        Reply::Response { status, .. } => AttemptOutcome::Response(Response {
            status: *status,
            retry_after: reply.header("retry-after"),
            amz_retry_after: reply.header("x-amz-retry-after"),
            grpc_pushback_ms: reply.header("grpc-retry-pushback-ms"),
            error_code: reply.header("x-amzn-errortype"),
        }),
        Reply::Failed(e) => AttemptOutcome::Transport(*e),
    }
}
