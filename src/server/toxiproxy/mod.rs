//! Toxiproxy's HTTP API in front of stormrig's counting fault proxy, so that the tooling
//! teams already have for Toxiproxy (its client libraries, `toxiproxy-cli`, test helpers)
//! drives stormrig's proxies unchanged.
//!
//! One API server on a control port of its own (Toxiproxy's default is 8474) holds named
//! proxies; each is a [`StandaloneProxy`] on its own loopback listener in front of its own
//! upstream, with the toxics of `toxic` installed as its faults. The routes and answers
//! follow Toxiproxy v2.12's `api.go`: `GET /version`, `POST /reset`, `GET|POST /proxies`,
//! `POST /populate`, `GET|POST|PATCH|DELETE /proxies/{proxy}`, `GET|POST
//! /proxies/{proxy}/toxics`, `GET|POST|PATCH|DELETE /proxies/{proxy}/toxics/{toxic}`;
//! errors are `{"error": ..., "status": ...}` with that status.
//!
//! Where it differs, it says so in the answer rather than pretend:
//! - the proxies relay HTTP (1.1 or h2c), not any TCP stream, and count what they relay;
//! - proxies listen on loopback only, and their upstreams are loopback unless the server was
//!   started with that host allowed;
//! - like Toxiproxy it refuses browsers (`User-Agent: Mozilla/...`); beyond it, a request
//!   with an `Origin` or whose `Host` is not this server's loopback address is refused, so
//!   a web page cannot drive it even through DNS rebinding.

mod toxic;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::proxy::{check_loopback, serve_standalone, StandaloneProxy};
use super::TargetError;
use toxic::Toxic;

/// The most proxies one server holds.
pub const MAX_PROXIES: usize = 64;
/// The most toxics one proxy holds.
pub const MAX_TOXICS: usize = 32;
/// The largest request body the API reads.
const MAX_BODY: usize = 1 << 20;

/// An answer of the API that is not a success, as Toxiproxy's `ApiError`.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) message: String,
    pub(crate) status: u16,
}

impl ApiError {
    pub(crate) fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            message: message.into(),
            status: 400,
        }
    }

    fn with(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            message: message.into(),
            status,
        }
    }
}

/// Why the API server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ToxiproxyError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Populate(String),
}

/// A name of a proxy or toxic: it is a path segment of the API.
pub(crate) fn checked_name(name: &str) -> Result<&str, ApiError> {
    if name.is_empty() || name.len() > 128 || name.chars().any(|c| c == '/' || c.is_control()) {
        return Err(ApiError::bad(format!(
            "bad request body: name {name:?}: 1 to 128 characters, no `/`"
        )));
    }
    Ok(name)
}

/// One named proxy: what the API shows, and the proxy while it runs.
struct Named {
    listen: String,
    upstream: String,
    enabled: bool,
    toxics: Vec<Toxic>,
    running: Option<StandaloneProxy>,
}

struct Collection {
    proxies: BTreeMap<String, Named>,
    seed: u64,
    allow_remote: Option<String>,
}

/// The knobs of [`serve`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Seed of the per-request toxicity draws.
    pub seed: u64,
    /// A non-loopback upstream host the proxies may connect to.
    pub allow_remote: Option<String>,
}

/// A running Toxiproxy-compatible API server.
pub struct ToxiproxyServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

struct State {
    collection: Mutex<Collection>,
    port: u16,
}

/// Starts the API on `listen` (loopback; the caller checks), with no proxies.
pub async fn serve(
    listen: SocketAddr,
    options: Options,
) -> Result<ToxiproxyServer, ToxiproxyError> {
    let bind = |source| ToxiproxyError::Bind {
        addr: listen,
        source,
    };
    let listener = TcpListener::bind(listen).await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let state = Arc::new(State {
        collection: Mutex::new(Collection {
            proxies: BTreeMap::new(),
            seed: options.seed,
            allow_remote: options.allow_remote,
        }),
        port: addr.port(),
    });
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let served = state.clone();
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let state = served.clone();
                    connections.spawn(async move {
                        let svc = service_fn(move |req| answer(state.clone(), req));
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), svc)
                            .await;
                    });
                }
                _ = stopped.changed() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        connections.abort_all();
    });
    Ok(ToxiproxyServer {
        addr,
        state,
        stop,
        task,
    })
}

impl ToxiproxyServer {
    /// Where the API listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Creates the proxies of a JSON array, as `toxiproxy-server -config FILE` does.
    pub async fn populate(&self, body: &[u8]) -> Result<usize, ToxiproxyError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ToxiproxyError::Populate(format!("not JSON: {e}")))?;
        let mut c = self.state.collection.lock().await;
        let (done, failed) = c.populate(&value).await;
        match failed {
            Some(e) => Err(ToxiproxyError::Populate(e.message)),
            None => Ok(done.len()),
        }
    }

    /// Stops the API and every proxy.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        let mut c = self.state.collection.lock().await;
        for named in c.proxies.values_mut() {
            named.stop().await;
        }
    }
}

impl Named {
    fn json(&self, name: &str) -> Value {
        json!({
            "name": name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": self.toxics.iter().map(Toxic::json).collect::<Vec<_>>(),
        })
    }

    async fn start(&mut self, seed: u64, allow_remote: Option<&str>) -> Result<(), ApiError> {
        let listen = listen_addr(&self.listen)?;
        let upstream = upstream_addr(&self.upstream, allow_remote)?;
        let proxy = serve_standalone(listen, upstream, Vec::new(), seed)
            .await
            .map_err(|e| ApiError::with(500, e.to_string()))?;
        self.listen = proxy.addr().to_string();
        self.running = Some(proxy);
        self.install(&self.toxics)
    }

    async fn stop(&mut self) {
        if let Some(p) = self.running.take() {
            p.shutdown().await;
        }
    }

    /// Puts `toxics` in force, in order, on the running proxy (checked first; nothing
    /// changes on an error).
    fn install(&self, toxics: &[Toxic]) -> Result<(), ApiError> {
        let mut faults = Vec::new();
        for t in toxics {
            faults.extend(t.faults()?);
        }
        match &self.running {
            Some(p) => p
                .set_faults(faults)
                .map_err(|e: TargetError| ApiError::bad(e.to_string())),
            None => Ok(()),
        }
    }

    /// Replaces the toxic list after installing it.
    fn set_toxics(&mut self, toxics: Vec<Toxic>) -> Result<(), ApiError> {
        self.install(&toxics)?;
        self.toxics = toxics;
        Ok(())
    }
}

/// A proxy's own listen address: loopback, port 0 for any.
fn listen_addr(listen: &str) -> Result<SocketAddr, ApiError> {
    let (host, port) = split_host_port(listen, "listen")?;
    let ip = match host {
        "localhost" | "" => std::net::IpAddr::from([127, 0, 0, 1]),
        h => h
            .parse()
            .ok()
            .filter(|ip: &std::net::IpAddr| ip.is_loopback())
            .ok_or_else(|| {
                ApiError::bad(format!(
                    "listen {listen:?}: proxies listen on loopback only (127.0.0.1, [::1] or localhost)"
                ))
            })?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// A proxy's upstream: loopback, or the host the server was started to allow.
fn upstream_addr(upstream: &str, allow_remote: Option<&str>) -> Result<SocketAddr, ApiError> {
    let (host, port) = split_host_port(upstream, "upstream")?;
    check_loopback(host, allow_remote).map_err(|e| ApiError::bad(format!("upstream: {e}")))?;
    if let Some(ip) = crate::scenario::host::Host::parse(host).literal() {
        return Ok(SocketAddr::new(ip, port));
    }
    if host == "localhost" {
        return Ok(SocketAddr::new(
            std::net::IpAddr::from([127, 0, 0, 1]),
            port,
        ));
    }
    use std::net::ToSocketAddrs;
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| ApiError::bad(format!("upstream {upstream:?}: resolves to no address")))
}

fn split_host_port<'a>(text: &'a str, field: &str) -> Result<(&'a str, u16), ApiError> {
    let bad = || {
        ApiError::bad(format!(
            "{field} {text:?}: give host:port, e.g. 127.0.0.1:8080"
        ))
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Ok((host, port))
}

/// The fields of a proxy in a create or populate body.
struct ProxyInput {
    name: String,
    listen: String,
    upstream: String,
    enabled: bool,
}

fn proxy_input(v: &Value) -> Result<ProxyInput, ApiError> {
    let obj = v
        .as_object()
        .ok_or_else(|| ApiError::bad("bad request body: a proxy is one JSON object"))?;
    let text = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::bad(format!("bad request body: {key}: a string"))),
    };
    let name = text("name")?;
    if name.is_empty() {
        return Err(ApiError::bad("missing required field: name"));
    }
    checked_name(&name)?;
    let upstream = text("upstream")?;
    if upstream.is_empty() {
        return Err(ApiError::bad("missing required field: upstream"));
    }
    let listen = text("listen")?;
    let enabled = match obj.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ApiError::bad("bad request body: enabled: true or false")),
    };
    Ok(ProxyInput {
        name,
        listen: if listen.is_empty() {
            "127.0.0.1:0".into()
        } else {
            listen
        },
        upstream,
        enabled,
    })
}

impl Collection {
    async fn create(&mut self, input: ProxyInput) -> Result<Value, ApiError> {
        if self.proxies.contains_key(&input.name) {
            return Err(ApiError::with(409, "proxy already exists"));
        }
        if self.proxies.len() >= MAX_PROXIES {
            return Err(ApiError::with(
                409,
                format!("{MAX_PROXIES} proxies is the limit; delete one first"),
            ));
        }
        // Checked even when not started, so a bad address fails now, not at enable.
        listen_addr(&input.listen)?;
        upstream_addr(&input.upstream, self.allow_remote.as_deref())?;
        let mut named = Named {
            listen: input.listen,
            upstream: input.upstream,
            enabled: input.enabled,
            toxics: Vec::new(),
            running: None,
        };
        if named.enabled {
            named.start(self.seed, self.allow_remote.as_deref()).await?;
        }
        let shown = named.json(&input.name);
        self.proxies.insert(input.name, named);
        Ok(shown)
    }

    /// Toxiproxy's `PopulateJson`: each proxy created, or kept when one of its name already
    /// has its listen address and upstream, or replaced. Stops at the first error, with the
    /// proxies done so far.
    async fn populate(&mut self, body: &Value) -> (Vec<Value>, Option<ApiError>) {
        let Some(list) = body.as_array() else {
            return (
                Vec::new(),
                Some(ApiError::bad("bad request body: an array of proxies")),
            );
        };
        let mut done = Vec::new();
        for item in list {
            let input = match proxy_input(item) {
                Ok(i) => i,
                Err(e) => return (done, Some(e)),
            };
            if let Some(existing) = self.proxies.get(&input.name) {
                if existing.listen == input.listen && existing.upstream == input.upstream {
                    done.push(existing.json(&input.name));
                    continue;
                }
                if let Some(mut old) = self.proxies.remove(&input.name) {
                    old.stop().await;
                }
            }
            match self.create(input).await {
                Ok(v) => done.push(v),
                Err(e) => return (done, Some(e)),
            }
        }
        (done, None)
    }

    fn named(&mut self, name: &str) -> Result<&mut Named, ApiError> {
        self.proxies
            .get_mut(name)
            .ok_or_else(|| ApiError::with(404, "proxy not found"))
    }

    async fn update(&mut self, name: &str, body: &Value) -> Result<Value, ApiError> {
        let (seed, allow) = (self.seed, self.allow_remote.clone());
        let named = self.named(name)?;
        let obj = body
            .as_object()
            .ok_or_else(|| ApiError::bad("bad request body: a proxy is one JSON object"))?;
        let text = |key: &str, now: &str| match obj.get(key) {
            None | Some(Value::Null) => Ok(now.to_string()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(ApiError::bad(format!("bad request body: {key}: a string"))),
        };
        let listen = text("listen", &named.listen)?;
        let upstream = text("upstream", &named.upstream)?;
        let enabled = match obj.get("enabled") {
            None | Some(Value::Null) => named.enabled,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ApiError::bad("bad request body: enabled: true or false")),
        };
        listen_addr(&listen)?;
        upstream_addr(&upstream, allow.as_deref())?;
        let moved = listen != named.listen || upstream != named.upstream;
        if moved || !enabled {
            named.stop().await;
        }
        named.listen = listen;
        named.upstream = upstream;
        named.enabled = enabled;
        if enabled && named.running.is_none() {
            named.start(seed, allow.as_deref()).await?;
        }
        Ok(named.json(name))
    }

    /// `POST /reset`: every proxy enabled and without toxics.
    async fn reset(&mut self) -> Result<(), ApiError> {
        let (seed, allow) = (self.seed, self.allow_remote.clone());
        for named in self.proxies.values_mut() {
            named.set_toxics(Vec::new())?;
            named.enabled = true;
            if named.running.is_none() {
                named.start(seed, allow.as_deref()).await?;
            }
        }
        Ok(())
    }
}

fn reply(status: u16, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn no_content() -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

fn failure(e: &ApiError) -> Response<Full<Bytes>> {
    reply(e.status, &json!({ "error": e.message, "status": e.status }))
}

/// Who may drive the API: not a browser, and only through this server's loopback address.
fn admitted(req: &Request<Incoming>, port: u16) -> Result<(), ApiError> {
    let h = req.headers();
    let text = |name| {
        h.get(name)
            .and_then(|v: &hyper::header::HeaderValue| v.to_str().ok())
    };
    if text(hyper::header::USER_AGENT).is_some_and(|ua| ua.starts_with("Mozilla/")) {
        return Err(ApiError::with(403, "User agent not allowed"));
    }
    if h.contains_key(hyper::header::ORIGIN) {
        return Err(ApiError::with(
            403,
            "requests from web pages are not allowed",
        ));
    }
    let host_ok = text(hyper::header::HOST).is_some_and(|host| {
        ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host == format!("{name}:{port}"))
    });
    if !host_ok {
        return Err(ApiError::with(
            403,
            format!(
                "Host must name this server: 127.0.0.1:{port}, localhost:{port} or [::1]:{port}"
            ),
        ));
    }
    Ok(())
}

async fn answer(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if let Err(e) = admitted(&req, state.port) {
        return Ok(failure(&e));
    }
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Ok(failure(&ApiError::with(
                413,
                format!("bad request body: longer than {MAX_BODY} bytes"),
            )))
        }
    };
    let mut c = state.collection.lock().await;
    Ok(match route(&mut c, &method, &path, &body).await {
        Ok(r) => r,
        Err(e) => failure(&e),
    })
}

fn json_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("bad request body: {e}")))
}

async fn route(
    c: &mut Collection,
    method: &Method,
    path: &str,
    body: &[u8],
) -> Result<Response<Full<Bytes>>, ApiError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let post = method == Method::POST || method == Method::PATCH;
    match (parts.as_slice(), method) {
        (["version"], &Method::GET) => Ok(reply(
            200,
            &json!({ "version": concat!("stormrig ", env!("CARGO_PKG_VERSION")) }),
        )),
        (["reset"], &Method::POST) => {
            c.reset().await?;
            Ok(no_content())
        }
        (["proxies"], &Method::GET) => {
            let all: serde_json::Map<String, Value> = c
                .proxies
                .iter()
                .map(|(name, p)| (name.clone(), p.json(name)))
                .collect();
            Ok(reply(200, &Value::Object(all)))
        }
        (["proxies"], &Method::POST) => {
            let input = proxy_input(&json_body(body)?)?;
            Ok(reply(201, &c.create(input).await?))
        }
        (["populate"], &Method::POST) => {
            let (done, failed) = c.populate(&json_body(body)?).await;
            Ok(match failed {
                None => reply(201, &json!({ "proxies": done })),
                Some(e) => reply(
                    e.status,
                    &json!({ "error": e.message, "status": e.status, "proxies": done }),
                ),
            })
        }
        (["proxies", name], &Method::GET) => Ok(reply(200, &c.named(name)?.json(name))),
        (["proxies", name], _) if post => Ok(reply(200, &c.update(name, &json_body(body)?).await?)),
        (["proxies", name], &Method::DELETE) => {
            c.named(name)?;
            if let Some(mut gone) = c.proxies.remove(*name) {
                gone.stop().await;
            }
            Ok(no_content())
        }
        (["proxies", name, "toxics"], &Method::GET) => {
            let named = c.named(name)?;
            let list: Vec<Value> = named.toxics.iter().map(Toxic::json).collect();
            Ok(reply(200, &Value::Array(list)))
        }
        (["proxies", name, "toxics"], &Method::POST) => {
            let named = c.named(name)?;
            let toxic = Toxic::create(&json_body(body)?)?;
            if named.toxics.iter().any(|t| t.name == toxic.name) {
                return Err(ApiError::with(409, "toxic already exists"));
            }
            if named.toxics.len() >= MAX_TOXICS {
                return Err(ApiError::with(
                    409,
                    format!("{MAX_TOXICS} toxics is the limit of a proxy; remove one first"),
                ));
            }
            let shown = toxic.json();
            let mut next = named.toxics.clone();
            next.push(toxic);
            named.set_toxics(next)?;
            Ok(reply(200, &shown))
        }
        (["proxies", name, "toxics", toxic], m) => {
            let named = c.named(name)?;
            let at = named
                .toxics
                .iter()
                .position(|t| t.name == *toxic)
                .ok_or_else(|| ApiError::with(404, "toxic not found"))?;
            match *m {
                Method::GET => Ok(reply(200, &named.toxics[at].json())),
                Method::DELETE => {
                    let mut next = named.toxics.clone();
                    next.remove(at);
                    named.set_toxics(next)?;
                    Ok(no_content())
                }
                _ if post => {
                    let updated = named.toxics[at].update(&json_body(body)?)?;
                    let shown = updated.json();
                    let mut next = named.toxics.clone();
                    next[at] = updated;
                    named.set_toxics(next)?;
                    Ok(reply(200, &shown))
                }
                _ => Err(ApiError::with(405, "method not allowed")),
            }
        }
        (["version" | "reset" | "proxies" | "populate"], _)
        | (["proxies", _] | ["proxies", _, "toxics"], _) => {
            Err(ApiError::with(405, "method not allowed"))
        }
        _ => Err(ApiError::with(404, format!("no route {method} {path}"))),
    }
}
