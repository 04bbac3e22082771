//! The counting fault proxy: stormrig's fault timeline and exact counters in front of any
//! real HTTP server on loopback: HTTP/1.1 or HTTP/2 (`h2c`, or `h2` over TLS), in clear or
//! over TLS ([`ProxyOptions::upstream`]).
//!
//! Over TLS the proxy terminates nothing it need not: its listener speaks clear text on
//! loopback (HTTP/2 in clear when the upstream speaks HTTP/2, so the client's streams and
//! connections are HTTP/2's), and it is the proxy's *upstream side* that talks TLS to the
//! real server, verifying its certificate as the scenario says. Faults apply at the proxy,
//! before TLS; arrivals are counted at the proxy, `forwarded` once a request went out over
//! an established (TLS) connection. A failed TLS handshake is not forwarded: it is answered
//! 502 with `x-stormrig-upstream: tls-handshake`, which the generator counts as the
//! `tls-handshake` outcome, never as a server answer.
//!
//! It is the built-in target's server with the service model's *work* replaced by a forward
//! to the upstream (one code path, `start_inner`). Per request, in order:
//! 1. the arrival is counted and goes in flight (arrivals, per second, peaks);
//! 2. the request body is read (kept for the forward, hashed for dedup);
//! 3. [`FaultTimeline::decide`](crate::scenario::timeline::FaultTimeline::decide): added latency is waited first; then **status** faults are
//!    answered at once, **reset** closes the connection without an answer, **hang** holds
//!    the request until the client leaves (none of these three is ever forwarded);
//! 4. dedup by `Idempotency-Key` when `config.dedup` is enabled (replays, 409, 422 answered
//!    by the proxy, not forwarded);
//! 5. the proxy's concurrency slots: `model.concurrency` slots, `model.queue` waiting places
//!    and `model.queue_timeout` (shed with 503, as the built-in target), with **capacity**
//!    faults changing the slot count. `model.service_time` is not used: the real server's
//!    own time is the service time. Pass `concurrency = u32::MAX` for "no limit but the
//!    capacity faults" (what [`serve_standalone`] does);
//! 6. the forward to the upstream and the relay of its answer (`relay`: headers
//!    passed on, bodies buffered whole and bounded by [`MAX_BODY`], interim answers by
//!    [`MAX_INFORMATIONAL`], an HTTP/2 upstream's frames that carry no answer by a budget
//!    per connection, upstream resets relayed as resets, gateway errors marked; a
//!    gRPC call relayed with its trailers, the proxy's own answers to it trailers-only);
//! 7. **lost-response** faults: the request is forwarded (the real server executes), then the
//!    response is dropped: answered with the fault's `status`, or held without an answer
//!    until the client leaves (exactly as the built-in target does).
//!
//! # Standalone proxy and its control endpoint
//!
//! [`serve_standalone`] runs the same proxy with a control endpoint on the **same loopback
//! listener**, under the reserved prefix [`CONTROL_PREFIX`] (`/_stormrig/`). Requests under
//! it are answered by the proxy, never forwarded, counted or faulted; every other path,
//! `/metrics` included, goes to the upstream (the upstream's own `/metrics` is not shadowed):
//! Every control request must carry the proxy's control token (`Authorization: Bearer
//! TOKEN`; random and printed at start, or given with `--control-token`), must name the
//! proxy itself in `Host` (a loopback address or `localhost`, with the listen port: a page
//! that rebinds its own DNS name to 127.0.0.1 cannot pass) and must carry no `Origin` (no
//! browser page, same-site or not, may drive it); otherwise 401 or 403, and nothing changes.
//! - `/_stormrig/faults...`: the fault API (JSON; add, list, enable, disable and remove
//!   faults at run time, start the `--faults` file's windows), see `fault_api`.
//!   Faults are off until started or added.
//! - `GET /_stormrig/metrics`: Prometheus text exposition format 0.0.4, see [`metrics_text`],
//!   plus a fault-active gauge and a hit counter per fault.
//!
//! # Safety
//!
//! [`check_loopback`] refuses a non-loopback upstream unless its host is named explicitly;
//! the caller runs it before any packet is sent. Names are not resolved (a DNS answer can
//! change between the check and the connect): the exact name `localhost` and IPs in
//! 127.0.0.0/8 or `::1` (numeric forms such as `0x7f000001` read as their address) are
//! loopback; everything else, `*.localhost` included, is remote.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::time::Instant;

pub use super::counters::Trouble;
use super::fault_api::FaultRegistry;
use super::{start_inner, Resp, Shared, TargetConfig, TargetError, TargetHandle};
use crate::metrics::TargetStats;
use crate::scenario::error::{ErrorKind, ScenarioError};
use crate::scenario::model::{Fault, FaultSection, ServiceModel};
use crate::scenario::source::SourceMap;
use crate::scenario::validate;

/// Paths under this prefix are the standalone proxy's control endpoint.
pub const CONTROL_PREFIX: &str = "/_stormrig/";

/// The longest request or response body the proxy buffers to relay (bytes).
pub use super::relay::MAX_BODY;

/// Past this many interim (1xx) answers from the upstream, the exchange ends as a protocol
/// error (502, `x-stormrig-upstream: protocol-error`); the live client holds the same bound.
pub use super::relay::MAX_INFORMATIONAL;

/// The HTTP version and TLS of the proxy's upstream side.
pub use super::relay::UpstreamWire;

pub(crate) use super::relay::{Upstream, UpstreamReset};

/// Knobs of the proxy that a [`TargetConfig`] does not carry.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// Longest wait for the upstream's complete response (connect included); then 504.
    pub upstream_timeout: Duration,
    /// The standalone proxy's control token; `None` draws a random one.
    pub control_token: Option<String>,
    /// What the proxy speaks to the real server.
    pub upstream: UpstreamWire,
    /// What the proxy's own listener speaks.
    pub listen: super::Listen,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            upstream_timeout: Duration::from_secs(30),
            control_token: None,
            upstream: UpstreamWire::default(),
            listen: super::Listen::default(),
        }
    }
}

/// A fresh control token: 128 random bits from the operating system, in hex.
pub fn random_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::getrandom(&mut bytes).is_err() {
        // No OS randomness: fall back to the process's hash keys (still unguessable from a
        // web page, which is what the token guards against).
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            chunk.copy_from_slice(&h.finish().to_le_bytes()[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The standalone proxy's faults and who may change them.
pub(crate) struct Control {
    registry: Mutex<FaultRegistry>,
    token: String,
    /// The listen port, once bound: the `Host` a control request must name.
    port: u16,
}

impl Control {
    /// The same control, for the address the proxy was bound to.
    pub(crate) fn bound_to(self, addr: SocketAddr) -> Control {
        Control {
            port: addr.port(),
            ..self
        }
    }
}

/// Starts the fault proxy on `bind` (port 0 picks a free port) in front of `upstream`, with
/// the default [`ProxyOptions`]. The handle is the built-in target's: the engine treats
/// both alike. `forwarded` in its stats counts what reached the upstream.
pub async fn start_proxy(
    bind: SocketAddr,
    upstream: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
) -> Result<TargetHandle, TargetError> {
    start_proxy_with(bind, upstream, config, epoch, ProxyOptions::default()).await
}

/// [`start_proxy`] with explicit [`ProxyOptions`].
pub async fn start_proxy_with(
    bind: SocketAddr,
    upstream: SocketAddr,
    config: TargetConfig,
    epoch: Instant,
    options: ProxyOptions,
) -> Result<TargetHandle, TargetError> {
    start_inner(
        bind,
        config,
        epoch,
        Some(Upstream::new(
            upstream,
            options.upstream_timeout,
            &options.upstream,
        )),
        None,
        true,
        options.listen,
    )
    .await
}

/// A running standalone proxy (`stormrig proxy`).
pub struct StandaloneProxy {
    handle: TargetHandle,
}

impl StandaloneProxy {
    /// Where clients send traffic.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr()
    }

    /// Where the control endpoint is: the same listener, under [`CONTROL_PREFIX`].
    pub fn control_addr(&self) -> SocketAddr {
        self.handle.addr()
    }

    /// The token every control request must carry (`Authorization: Bearer TOKEN`).
    pub fn control_token(&self) -> &str {
        self.handle
            .shared
            .control
            .as_ref()
            .map_or("", |c| c.token.as_str())
    }

    /// Upstream responses refused for a body longer than [`MAX_BODY`].
    pub fn body_too_large(&self) -> u64 {
        self.handle.shared.counters.trouble(Trouble::BodyTooLarge)
    }

    /// Upstream answers refused as protocol errors (see [`MAX_INFORMATIONAL`]).
    pub fn protocol_errors(&self) -> u64 {
        self.handle.shared.counters.trouble(Trouble::ProtocolError)
    }

    /// Forwarded requests answered 504 for the upstream timeout.
    pub fn upstream_timeouts(&self) -> u64 {
        self.handle.shared.counters.trouble(Trouble::Timeout)
    }

    /// Requests the upstream reset, relayed to the client as resets.
    pub fn upstream_resets(&self) -> u64 {
        self.handle.shared.counters.trouble(Trouble::Reset)
    }

    pub fn stats(&self) -> TargetStats {
        self.handle.stats()
    }

    pub fn in_flight(&self) -> u64 {
        self.handle.in_flight()
    }

    /// Replaces the faults added at run time (through the fault API or the Toxiproxy API)
    /// by `faults`, each in force from now until removed; the `--faults` file's windows stay.
    pub fn set_faults(&self, faults: Vec<Fault>) -> Result<(), TargetError> {
        // What the server builds from the faults (status codes, header values) is checked
        // before any of them replaces what is in force.
        super::ArmedFaults::new(faults.clone(), 0)?;
        let shared = &self.handle.shared;
        let Some(control) = shared.control.as_ref() else {
            return Ok(());
        };
        let mut reg = control.registry.lock().unwrap_or_else(|e| e.into_inner());
        reg.replace_api_faults(faults);
        super::fault_api::rearm(shared, &reg)
    }

    /// The `/_stormrig/metrics` text now.
    pub fn metrics_text(&self) -> String {
        control_metrics(&self.handle.shared)
    }

    pub async fn shutdown(self) -> TargetStats {
        self.handle.shutdown().await
    }
}

/// Runs the proxy on `listen` in front of `upstream` with the control endpoint. `faults` are
/// loaded but off until `POST /_stormrig/faults/start`. No concurrency limit but capacity
/// faults; no dedup; upstream timeout 30 s. The caller checks the upstream with
/// [`check_loopback`] first.
pub async fn serve_standalone(
    listen: SocketAddr,
    upstream: SocketAddr,
    faults: Vec<Fault>,
    seed: u64,
) -> Result<StandaloneProxy, TargetError> {
    serve_standalone_with(listen, upstream, faults, seed, ProxyOptions::default()).await
}

/// [`serve_standalone`] with explicit [`ProxyOptions`].
pub async fn serve_standalone_with(
    listen: SocketAddr,
    upstream: SocketAddr,
    faults: Vec<Fault>,
    seed: u64,
    options: ProxyOptions,
) -> Result<StandaloneProxy, TargetError> {
    let config = TargetConfig {
        model: ServiceModel {
            concurrency: u32::MAX,
            ..ServiceModel::default()
        },
        faults: faults.clone(),
        seed,
        dedup: None,
    };
    let token = options.control_token.clone().unwrap_or_else(random_token);
    let epoch = Instant::now();
    let handle = start_inner(
        listen,
        config,
        epoch,
        Some(Upstream::new(
            upstream,
            options.upstream_timeout,
            &options.upstream,
        )),
        Some(Control {
            registry: Mutex::new(FaultRegistry::new(faults, seed, epoch)),
            token,
            port: 0,
        }),
        false,
        options.listen,
    )
    .await?;
    Ok(StandaloneProxy { handle })
}

/// Refuses a non-loopback `host` unless `allow_remote` names it. Does not resolve names: only
/// 127.0.0.0/8, `::1` (also IPv4-mapped) and the exact name `localhost` are loopback, and
/// numeric forms (`0x7f000001`, `2130706433`) are read as their address first, in
/// `allow_remote` too (see [`crate::scenario::host`]). `host` may carry IPv6 brackets.
pub fn check_loopback(host: &str, allow_remote: Option<&str>) -> Result<(), TargetError> {
    if crate::scenario::host::allowed(host, allow_remote) {
        Ok(())
    } else {
        Err(TargetError::Remote {
            host: host.to_string(),
        })
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultsFile {
    #[serde(default)]
    faults: Vec<FaultSection>,
}

/// Reads a `--faults` file: `[[faults]]` tables in the scenario format, checked by the
/// scenario's own validation (windows must end within 24 h of the start). Errors name the
/// file, line and field, like scenario errors.
pub fn parse_faults_file(path: &Path) -> Result<Vec<Fault>, ScenarioError> {
    let text = crate::scenario::load::read_text(path)?;
    parse_faults(path, &text)
}

/// [`parse_faults_file`] on text already read.
pub fn parse_faults(path: &Path, text: &str) -> Result<Vec<Fault>, ScenarioError> {
    let (file, map): (FaultsFile, SourceMap) = crate::scenario::load::deserialize(path, text)?;
    if file.faults.len() > crate::scenario::limits::MAX_FAULTS {
        return Err(ScenarioError::new(
            path,
            Some(1),
            Some("faults".into()),
            ErrorKind::Invalid(format!(
                "{} fault windows is above the limit of {}",
                file.faults.len(),
                crate::scenario::limits::MAX_FAULTS
            )),
        ));
    }
    file.faults
        .iter()
        .enumerate()
        .map(|(i, f)| validate::check_fault(i, f, validate::MAX_DURATION))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|r| {
            ScenarioError::new(
                path,
                Some(map.line(&r.field).unwrap_or(1)),
                Some(r.field),
                ErrorKind::Invalid(r.message),
            )
        })
}

/// The Prometheus text exposition (format 0.0.4) of a proxy's counts.
pub fn metrics_text(stats: &TargetStats, in_flight: u64, trouble: &[(Trouble, u64)]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, lines: Vec<(String, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, v) in lines {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let one = |v: u64| vec![(String::new(), v)];
    metric(
        "stormrig_proxy_arrivals_total",
        "counter",
        "Requests that arrived at the proxy (unreached ones included: a counter never goes down).",
        one(stats.arrivals + stats.unreached),
    );
    metric(
        "stormrig_proxy_forwarded_total",
        "counter",
        "Requests forwarded to the upstream server.",
        one(stats.forwarded),
    );
    metric(
        "stormrig_proxy_unreached_total",
        "counter",
        "Requests the proxy answered itself because the upstream server could not be reached.",
        one(stats.unreached),
    );
    metric(
        "stormrig_proxy_in_flight",
        "gauge",
        "Requests in flight at the proxy now.",
        one(in_flight),
    );
    metric(
        "stormrig_proxy_peak_in_flight",
        "gauge",
        "Largest number of requests in flight at once.",
        one(stats.peak_in_flight),
    );
    metric(
        "stormrig_proxy_responses_total",
        "counter",
        "Responses sent to clients by status code (faults and gateway errors included).",
        stats
            .responses_by_status
            .iter()
            .map(|(s, n)| (format!("{{status=\"{s}\"}}"), *n))
            .collect(),
    );
    metric(
        "stormrig_proxy_resets_total",
        "counter",
        "Connections closed without an answer (reset faults).",
        one(stats.resets),
    );
    metric(
        "stormrig_proxy_hangs_total",
        "counter",
        "Requests held without an answer (hang faults).",
        one(stats.hangs),
    );
    metric(
        "stormrig_proxy_shed_total",
        "counter",
        "Requests refused by the proxy's concurrency slots (capacity faults).",
        one(stats.shed),
    );
    metric(
        "stormrig_proxy_lost_responses_total",
        "counter",
        "Forwarded requests whose response was dropped (lost-response faults).",
        one(stats.lost_responses),
    );
    for (kind, n) in trouble {
        let (name, help) = kind.metric();
        metric(name, "counter", help, one(*n));
    }
    out
}

fn text(status: StatusCode, body: String) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

/// Why a control request is refused before it acts, if it is: no or a wrong token (401), a
/// `Host` that is not this proxy or any `Origin` (403).
fn refuse_control(ctl: &Control, headers: &HeaderMap) -> Option<Resp> {
    if headers.contains_key(hyper::header::ORIGIN) {
        return Some(text(
            StatusCode::FORBIDDEN,
            "control requests from a web page (any Origin) are refused\n".into(),
        ));
    }
    let host_ok = headers
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| names_this_proxy(h, ctl.port));
    if !host_ok {
        return Some(text(
            StatusCode::FORBIDDEN,
            format!(
                "the Host header must name this proxy (127.0.0.1:{0}, [::1]:{0} or localhost:{0})\n",
                ctl.port
            ),
        ));
    }
    let token = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if !token.is_some_and(|t| same_secret(t.as_bytes(), ctl.token.as_bytes())) {
        return Some(text(
            StatusCode::UNAUTHORIZED,
            "control requests need `Authorization: Bearer TOKEN` with the token the proxy printed at start\n"
                .into(),
        ));
    }
    None
}

/// True when `host` (a Host header) is a loopback address or `localhost`, with no port or
/// the proxy's own.
fn names_this_proxy(host: &str, port: u16) -> bool {
    let (name, p) = match host.rsplit_once(':') {
        Some((n, p)) if !n.is_empty() && (!n.contains(':') || n.ends_with(']')) => (n, Some(p)),
        _ => (host, None),
    };
    let port_ok = p.is_none_or(|p| p.parse::<u16>() == Ok(port));
    let h = crate::scenario::host::Host::parse(name);
    port_ok && h.is_loopback() && h.literal().is_some()
}

/// Compares two secrets in time that depends on their length only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The proxy's counts and, for the standalone proxy, its faults' series.
fn control_metrics(shared: &Shared) -> String {
    let mut out = metrics_text(
        &shared.counters.snapshot(shared.slots.peak_serving()),
        shared.counters.in_flight(),
        &Trouble::ALL.map(|k| (k, shared.counters.trouble(k))),
    );
    if let Some(ctl) = &shared.control {
        let reg = ctl.registry.lock().unwrap_or_else(|e| e.into_inner());
        out.push_str(&reg.metrics_text());
    }
    out
}

/// Answers a request under [`CONTROL_PREFIX`]: the checks, then metrics here and the fault
/// routes in [`super::fault_api`].
pub(crate) async fn control(shared: &Arc<Shared>, req: Request<super::body::ReqBody>) -> Resp {
    let Some(ctl) = &shared.control else {
        return text(StatusCode::NOT_FOUND, "no control endpoint\n".into());
    };
    let refused = refuse_control(ctl, req.headers());
    // Read the body (bounded) so the connection stays usable, and for the fault routes.
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let body = http_body_util::Limited::new(req.into_body(), 64 * 1024)
        .collect()
        .await
        .map(|b| b.to_bytes());
    if let Some(resp) = refused {
        return resp;
    }
    let Ok(body) = body else {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "control request bodies are limited to 64 KiB\n".into(),
        );
    };
    let sub = &path[CONTROL_PREFIX.len()..];
    match (sub, method) {
        ("metrics", Method::GET | Method::HEAD) => {
            let mut r = text(StatusCode::OK, control_metrics(shared));
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        ("metrics", _) => text(StatusCode::METHOD_NOT_ALLOWED, "use GET\n".into()),
        (s, m) if s == "faults" || s.starts_with("faults/") => {
            super::fault_api::route(shared, &ctl.registry, &m, s, &body)
        }
        _ => text(
            StatusCode::NOT_FOUND,
            format!(
                "unknown control path {path}; known: {CONTROL_PREFIX}faults (GET, POST), \
                 {CONTROL_PREFIX}faults/ID (GET, DELETE), POST {CONTROL_PREFIX}faults/ID/enable|disable, \
                 POST {CONTROL_PREFIX}faults/start|stop, GET {CONTROL_PREFIX}metrics\n"
            ),
        ),
    }
}
