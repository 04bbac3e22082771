//! Sending one attempt over real sockets, and translating what hyper, rustls and the kernel
//! said into the policy core's vocabulary. hyper types stop here; the policy never sees them.
//!
//! The client is a lean per-config pool of connections over `TcpStream`s with `TCP_NODELAY`,
//! not hyper-util's legacy `Client`: one target per config, so no pool key hashing, no
//! executor hop per request, LIFO reuse. Plain HTTP/1.1 connections are stormrig's own
//! (`h1`: the attempt's task writes the request and reads the response, no connection
//! task between them); over TLS (rustls) and HTTP/2 they are hyper's.
//!
//! HTTP/1.1 carries one request per connection at a time, so the pool holds many. HTTP/2
//! multiplexes: the client keeps one connection and opens a stream per attempt, as gRPC
//! clients and browsers do, and dials again only when the server closed it (GOAWAY). The
//! server's stream limit then queues attempts inside the connection.
//!
//! The pool may be bounded ([`HttpClient::with_max_connections`]): an attempt then waits for
//! a connection like a real client with a pool limit does, and that wait is part of the
//! attempt's latency and of its per-try timeout. Unbounded, an overloaded generator opens
//! connections without limit and becomes its own storm (every arrival that finds no idle
//! connection dials, the dials slow everything down, more arrivals find no connection).
//! Over HTTP/2 the bound limits attempts in flight at once, the streams of the one
//! connection.

use std::error::Error as StdError;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::Request;

use hyper_util::rt::{TokioExecutor, TokioIo};
pub use outgoing::{Outgoing, Stamp};
pub use reply_headers::{ReplyHeader, ReplyHeaders};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsConnector;

use crate::policy::TransportError;
use crate::scenario::Protocol;

mod h1;
mod outgoing;
mod reply_headers;

/// Connection set-up time (TCP and TLS) allowed before an attempt counts as a connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

type Body = Full<Bytes>;

/// One connection: hyper's request sender of either HTTP version (over TLS, and HTTP/2),
/// or the lean HTTP/1.1 connection of plain TCP ([`h1`]), which the attempt's own task
/// drives.
enum Sender {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
    Lean(h1::Conn),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
            Sender::Lean(c) => !c.is_open(),
        }
    }

    async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::H1(s) => s.ready().await,
            Sender::H2(s) => s.ready().await,
            Sender::Lean(_) => Ok(()),
        }
    }

    /// An idle connection can carry the next request.
    async fn usable(&mut self) -> bool {
        match self {
            Sender::Lean(c) => c.is_open(),
            s => s.ready().await.is_ok(),
        }
    }

    async fn try_send_request(
        &mut self,
        req: Request<Body>,
    ) -> Result<
        hyper::Response<hyper::body::Incoming>,
        hyper::client::conn::TrySendError<Request<Body>>,
    > {
        match self {
            Sender::H1(s) => s.try_send_request(req).await,
            Sender::H2(s) => s.try_send_request(req).await,
            Sender::Lean(_) => unreachable!("a lean connection is driven by send_lean"),
        }
    }

    async fn send_request(
        &mut self,
        req: Request<Body>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, hyper::Error> {
        match self {
            Sender::H1(s) => s.send_request(req).await,
            Sender::H2(s) => s.send_request(req).await,
            Sender::Lean(_) => unreachable!("a lean connection is driven by send_lean"),
        }
    }
}

/// How a connection is made past TCP: the HTTP version, and TLS with the name the
/// certificate must carry.
#[derive(Clone)]
pub struct Dialer {
    pub protocol: Protocol,
    pub tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("protocol", &self.protocol)
            .field("tls", &self.tls.as_ref().map(|(_, name)| name))
            .finish()
    }
}

impl Dialer {
    /// What `wire` asks for towards `host`, with `builtin` the built-in target's
    /// certificate when it serves TLS.
    pub fn new(
        wire: &crate::scenario::Wire,
        host: &str,
        builtin: Option<&rustls::pki_types::CertificateDer<'static>>,
    ) -> Result<Dialer, crate::tls::TlsError> {
        let tls = match &wire.tls {
            None => None,
            Some(trust) => {
                let config = crate::tls::client_config(trust, wire.protocol, builtin)?;
                let name = crate::tls::server_name(host).ok_or_else(|| {
                    crate::tls::TlsError::Config(rustls::Error::General(format!(
                        "`{host}` is not a name a certificate can carry"
                    )))
                })?;
                Some((TlsConnector::from(config), name))
            }
        };
        Ok(Dialer {
            protocol: wire.protocol,
            tls,
        })
    }
}

impl Default for Dialer {
    fn default() -> Self {
        Dialer {
            protocol: Protocol::Http1,
            tls: None,
        }
    }
}

/// A keep-alive client for one target (`host:port`): idle HTTP/1.1 connections are reused
/// last-in first-out, an HTTP/2 connection is shared; a connection whose attempt failed or
/// timed out is never reused.
pub struct HttpClient {
    /// `host:port` dialled for new connections.
    addr: String,
    /// `Host` header value sent with every request (unless the template sets one).
    host: HeaderValue,
    wire: Dialer,
    idle: Mutex<Vec<Sender>>,
    /// The shared HTTP/2 connection, and a lock held while one is dialled so that
    /// concurrent attempts wait for it instead of each opening their own.
    shared: tokio::sync::Mutex<Option<http2::SendRequest<Body>>>,
    /// One permit per connection an attempt may hold at once (None: unbounded). A permit
    /// is taken before a connection is checked out or dialled and returned after the
    /// connection went back to the idle list, so connections never outnumber permits.
    slots: Option<(usize, Arc<Semaphore>)>,
    /// Connections opened (TCP and, where spoken, TLS up), for streams per connection.
    opened: AtomicU64,
    /// Why the first failed TLS handshake failed (here, or at the proxy's upstream side),
    /// for the one line that tells the user what to fix.
    tls_failure: std::sync::OnceLock<String>,
}

/// A connection checked out for one attempt, with its pool slot (when bounded).
struct Lease {
    sender: Sender,
    reused: bool,
    _slot: Option<OwnedSemaphorePermit>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("addr", &self.addr)
            .field("protocol", &self.wire.protocol)
            .field("tls", &self.wire.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// `host:port` this client dials.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The `Host` header value of the target.
    pub fn host(&self) -> &HeaderValue {
        &self.host
    }

    /// Bounds the pool to `n` connections (at least 1): attempts beyond them wait for one.
    pub fn with_max_connections(mut self, n: usize) -> HttpClient {
        let n = n.max(1);
        self.slots = Some((n, Arc::new(Semaphore::new(n))));
        self
    }

    /// The pool's bound, if any.
    pub fn max_connections(&self) -> Option<usize> {
        self.slots.as_ref().map(|(n, _)| *n)
    }

    /// Speaks `wire` on new connections.
    pub fn with_wire(mut self, wire: Dialer) -> HttpClient {
        self.wire = wire;
        self
    }

    /// What new connections speak.
    pub fn protocol(&self) -> Protocol {
        self.wire.protocol
    }

    /// True when attempts go over HTTP/2.
    pub fn speaks_h2(&self) -> bool {
        self.wire.protocol.is_h2()
    }

    /// Why the first TLS handshake that failed did, if one did.
    pub fn tls_failure(&self) -> Option<&str> {
        self.tls_failure.get().map(String::as_str)
    }

    /// Connections opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    fn take_idle(&self) -> Option<Sender> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn put_idle(&self, s: Sender) {
        // An HTTP/2 sender is a handle on the shared connection: nothing to give back.
        if !matches!(s, Sender::H2(_)) && !s.is_closed() {
            self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(s);
        }
    }

    /// A connection ready for a request: an idle one (skipping any the server closed
    /// meanwhile) or a new one, after waiting for a pool slot when the pool is bounded.
    /// `Err` only when dialling failed.
    async fn checkout(&self) -> Result<Lease, TransportError> {
        let slot = match &self.slots {
            Some((_, sem)) => Some(
                Arc::clone(sem)
                    .acquire_owned()
                    .await
                    .expect("the pool's semaphore is never closed"),
            ),
            None => None,
        };
        if self.wire.protocol.is_h2() {
            return self.checkout_shared(slot).await;
        }
        while let Some(mut s) = self.take_idle() {
            // Readiness involves no request: a closed idle connection is simply dropped.
            if s.usable().await {
                return Ok(Lease {
                    sender: s,
                    reused: true,
                    _slot: slot,
                });
            }
        }
        let sender = self.dial().await?;
        Ok(Lease {
            sender,
            reused: false,
            _slot: slot,
        })
    }

    /// The HTTP/2 connection every attempt shares, dialled when there is none or the
    /// server closed it.
    async fn checkout_shared(
        &self,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<Lease, TransportError> {
        let mut shared = self.shared.lock().await;
        if let Some(s) = shared.as_ref().filter(|s| !s.is_closed()) {
            return Ok(Lease {
                sender: Sender::H2(s.clone()),
                reused: true,
                _slot: slot,
            });
        }
        let sender = match self.dial().await? {
            Sender::H2(s) => s,
            Sender::H1(_) | Sender::Lean(_) => unreachable!("an HTTP/2 client dials HTTP/2"),
        };
        *shared = Some(sender.clone());
        Ok(Lease {
            sender: Sender::H2(sender),
            reused: false,
            _slot: slot,
        })
    }

    /// Opens a new connection (TCP, TLS when spoken, the HTTP handshake) within
    /// [`CONNECT_TIMEOUT`]. Every failure here means the request never left the client
    /// (refused, timed out, a failed TLS handshake, or another connect error).
    async fn dial(&self) -> Result<Sender, TransportError> {
        // Boxed: the TCP, TLS and HTTP handshakes' state is kilobytes, and every attempt's
        // future would carry it inline (an open loop copies each request's future into a
        // task of its own), for the few attempts that dial.
        let connect = Box::pin(self.connect());
        let sender = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Err(_) => return Err(TransportError::ConnectTimeout),
            Ok(r) => r?,
        };
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(sender)
    }

    async fn connect(&self) -> Result<Sender, TransportError> {
        let stream = match TcpStream::connect(&*self.addr).await {
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(TransportError::ConnectTimeout)
            }
            Err(e) if is_local_resource(&e) => return Err(TransportError::LocalResource),
            Err(_) => return Err(TransportError::ConnectRefused),
            Ok(s) => s,
        };
        let _ = stream.set_nodelay(true);
        match &self.wire.tls {
            // Plain HTTP/1.1: no handshake, the attempt's task drives the socket.
            None if !self.wire.protocol.is_h2() => Ok(Sender::Lean(h1::Conn::new(stream))),
            None => handshake(self.wire.protocol, stream).await,
            Some((connector, name)) => {
                let tls = connector.connect(name.clone(), stream).await.map_err(|e| {
                    let _ = self.tls_failure.set(crate::tls::describe(&e));
                    TransportError::TlsHandshake
                })?;
                handshake(self.wire.protocol, tls).await
            }
        }
    }
}

/// The HTTP handshake on a connected stream; the connection runs on its own task.
async fn handshake<S>(protocol: Protocol, stream: S) -> Result<Sender, TransportError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let io = TokioIo::new(stream);
    // Errors surface through the request that was in flight; nothing to do with them here.
    let mut sender = if protocol.is_h2() {
        let (s, conn) = http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| connect_failure(&e))?;
        tokio::spawn(conn);
        Sender::H2(s)
    } else {
        let (s, conn) = http1::handshake(io)
            .await
            .map_err(|e| connect_failure(&e))?;
        tokio::spawn(conn);
        Sender::H1(s)
    };
    sender.ready().await.map_err(|e| connect_failure(&e))?;
    Ok(sender)
}

/// A failure before the first request was written: it never left the client, whatever
/// hyper calls it (an HTTP/2 server that refuses the preface closes or sends GOAWAY).
fn connect_failure(_: &hyper::Error) -> TransportError {
    TransportError::ConnectRefused
}

/// Builds a client for the target at `base_uri` (`http[s]://host[:port]`, any path ignored;
/// the scheme gives the default port, [`HttpClient::with_wire`] what is spoken):
/// keep-alive, `TCP_NODELAY`, bounded connect time.
pub fn client(base_uri: &str) -> HttpClient {
    let lower = base_uri.get(..8).map(str::to_ascii_lowercase);
    let (rest, default_port) = match lower.as_deref() {
        Some("https://") => (&base_uri[8..], 443),
        _ => (
            base_uri
                .strip_prefix("http://")
                .or_else(|| base_uri.strip_prefix("HTTP://"))
                .unwrap_or(base_uri),
            80,
        ),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let addr = if authority.starts_with('[') {
        // IPv6 literal: port after the closing bracket.
        match authority.rfind("]:") {
            Some(_) => authority.to_string(),
            None => format!("{authority}:{default_port}"),
        }
    } else if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:{default_port}")
    };
    let host = HeaderValue::from_str(authority).unwrap_or(HeaderValue::from_static("localhost"));
    HttpClient {
        addr,
        host,
        wire: Dialer::default(),
        idle: Mutex::new(Vec::new()),
        shared: tokio::sync::Mutex::new(None),
        slots: None,
        opened: AtomicU64::new(0),
        tls_failure: std::sync::OnceLock::new(),
    }
}

/// What came back from one attempt: a whole response, or a transport failure.
#[derive(Debug)]
pub enum Reply {
    Response {
        status: u16,
        /// Only the headers stormrig reads ([`ReplyHeaders`]).
        headers: ReplyHeaders,
        body: Bytes,
    },
    Failed(TransportError),
}

impl Reply {
    /// A header's value as text, when present and readable.
    pub fn header(&self, header: ReplyHeader) -> Option<&str> {
        match self {
            Reply::Response { headers, .. } => headers.get(header),
            Reply::Failed(_) => None,
        }
    }
}

/// Sends `req` (origin-form URI, `Host` set) and reads the whole response within `timeout`
/// (the per-try timeout, already cut to the remaining deadline by the policy). Only a
/// connection whose response was read whole goes back to the pool: a timed-out or failed
/// attempt's connection is dropped, never reused half-read.
///
/// A pooled connection the server closed between checks can refuse the request before a
/// byte of it is written (hyper hands the request back); that request never reached the
/// server, so it is sent once more on a fresh connection, and counts as one attempt.
///
/// When the timeout ends the attempt before it had a connection (waiting for a pool slot,
/// or dialling), the request never left the client: that is a connect timeout, safe to
/// retry whatever the method, not a per-try timeout of a request the server may have seen.
pub async fn send(client: &HttpClient, req: Outgoing<'_>, timeout: Option<Duration>) -> Reply {
    let connected = AtomicBool::new(false);
    let exchange = async {
        let mut lease = client.checkout().await?;
        connected.store(true, Ordering::Relaxed);
        if matches!(lease.sender, Sender::Lean(_)) {
            return send_lean(client, lease, &req).await;
        }
        let resp = match lease.sender.try_send_request(req.to_request()).await {
            Ok(resp) => resp,
            Err(mut e) => match e.take_message() {
                Some(req) if lease.reused => {
                    lease.sender = client.dial().await?;
                    lease
                        .sender
                        .send_request(req)
                        .await
                        .map_err(|e| classify(&e))?
                }
                _ => return Err(classify(e.error())),
            },
        };
        let (mut parts, body) = resp.into_parts();
        let (body, trailers) = read_bounded(body).await.map_err(|e| classify(&e))?;
        if let Some(trailers) = trailers {
            // gRPC's status travels in trailers; the reply reads them as headers.
            parts.headers.extend(trailers);
        }
        if parts
            .headers
            .get(crate::headers::UPSTREAM)
            .map(|v| v.as_bytes())
            == Some(crate::headers::UPSTREAM_TLS_HANDSHAKE.as_bytes())
        {
            // stormrig's proxy says why, in its answer's body.
            let why = String::from_utf8_lossy(&body).trim().to_string();
            let _ = client.tls_failure.set(why);
        }
        // Back to the idle list before the slot is released (when `lease` drops), so an
        // attempt waiting for the slot finds this connection instead of dialling.
        client.put_idle(lease.sender);
        Ok::<_, TransportError>(Reply::Response {
            status: parts.status.as_u16(),
            headers: ReplyHeaders::from_map(&parts.headers),
            body,
        })
    };
    let result = match timeout {
        Some(t) => match tokio::time::timeout(t, exchange).await {
            Ok(r) => r,
            Err(_) if !connected.load(Ordering::Relaxed) => Err(TransportError::ConnectTimeout),
            Err(_) => Err(TransportError::PerTryTimeout),
        },
        None => exchange.await,
    };
    result.unwrap_or_else(Reply::Failed)
}

/// [`send`]'s exchange over a lean HTTP/1.1 connection: as hyper's, a request refused by a
/// pooled connection before any byte of it was written is sent once more on a new one.
async fn send_lean(
    client: &HttpClient,
    mut lease: Lease,
    req: &Outgoing<'_>,
) -> Result<Reply, TransportError> {
    let answer = loop {
        let Sender::Lean(conn) = &mut lease.sender else {
            unreachable!("send_lean is given a lean connection")
        };
        match conn.exchange(req, MAX_KEPT_BODY).await {
            Ok(a) => break a,
            Err(h1::Failure::Unsent(_)) if lease.reused => {
                lease.sender = client.dial().await?;
                lease.reused = false;
            }
            Err(h1::Failure::Unsent(e) | h1::Failure::Sent(e)) => return Err(e),
        }
    };
    // The proxy says so in a gateway error (502): a success is never looked at.
    if answer.status >= 400
        && answer.headers.raw(ReplyHeader::Upstream)
            == Some(crate::headers::UPSTREAM_TLS_HANDSHAKE.as_bytes())
    {
        let why = String::from_utf8_lossy(&answer.body).trim().to_string();
        let _ = client.tls_failure.set(why);
    }
    if answer.reusable {
        // Back to the idle list before the slot is released (when `lease` drops).
        client.put_idle(lease.sender);
    }
    Ok(Reply::Response {
        status: answer.status,
        headers: answer.headers,
        body: answer.body,
    })
}

/// The most of one response body the client keeps: as much as stormrig's own servers
/// relay (the client only ever talks to them), so a layer relays a body whole. The rest is
/// read and dropped: the attempt still ends when the response does, while memory per
/// attempt stays bounded whatever the server sends.
pub const MAX_KEPT_BODY: usize = crate::server::proxy::MAX_BODY;

/// Reads `body` to its end, keeping its first [`MAX_KEPT_BODY`] bytes, and its trailers.
/// A body that comes in one frame (most small responses) is kept as that frame, without a
/// copy or an allocation; only a second frame starts a buffer.
async fn read_bounded(
    mut body: hyper::body::Incoming,
) -> Result<(Bytes, Option<HeaderMap>), hyper::Error> {
    let mut first: Option<Bytes> = None;
    let mut more: Option<bytes::BytesMut> = None;
    let mut trailers = None;
    while let Some(frame) = body.frame().await {
        match frame?.into_data() {
            Ok(data) => match (&first, &mut more) {
                (None, _) => first = Some(data.slice(..data.len().min(MAX_KEPT_BODY))),
                (Some(head), None) => {
                    let mut kept = bytes::BytesMut::from(&head[..]);
                    keep(&mut kept, &data);
                    more = Some(kept);
                }
                (Some(_), Some(kept)) => keep(kept, &data),
            },
            Err(frame) => trailers = frame.into_trailers().ok(),
        }
    }
    let body = match more {
        Some(kept) => kept.freeze(),
        None => first.unwrap_or_default(),
    };
    Ok((body, trailers))
}

/// Appends what of `data` still fits under [`MAX_KEPT_BODY`].
fn keep(kept: &mut bytes::BytesMut, data: &[u8]) {
    let room = MAX_KEPT_BODY.saturating_sub(kept.len());
    kept.extend_from_slice(&data[..data.len().min(room)]);
}

/// True when the kernel refused for lack of a local resource (file descriptors, a local
/// address or port, buffer space) rather than because of anything the target did.
pub fn is_local_resource(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS)
    ) || e.kind() == io::ErrorKind::AddrNotAvailable
}

/// Maps an error chain from hyper, hyper-util or the kernel onto a transport error kind.
///
/// Connection refused and connect timeouts are told apart because they prove the request
/// never reached the server (safe to retry even for POST); everything after the connection
/// was up is a reset, a read timeout or a protocol error.
pub fn classify(err: &(dyn StdError + 'static)) -> TransportError {
    let mut connect = false;
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(le) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= le.is_connect();
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if is_local_resource(io) {
                return TransportError::LocalResource;
            }
            match io.kind() {
                io::ErrorKind::ConnectionRefused => return TransportError::ConnectRefused,
                io::ErrorKind::TimedOut if connect => return TransportError::ConnectTimeout,
                io::ErrorKind::TimedOut => return TransportError::ReadTimeout,
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof => return TransportError::Reset,
                _ => {}
            }
        }
        if let Some(h2e) = e.downcast_ref::<h2::Error>() {
            if h2e.is_go_away() {
                return TransportError::Goaway;
            }
            if h2e.is_reset() {
                return TransportError::StreamReset;
            }
        }
        if let Some(he) = e.downcast_ref::<hyper::Error>() {
            if he.is_incomplete_message() || he.is_canceled() || he.is_closed() {
                return TransportError::Reset;
            }
            if he.is_parse() || he.is_parse_status() {
                return TransportError::Protocol;
            }
            if he.is_timeout() {
                return TransportError::ReadTimeout;
            }
        }
        if e.to_string().contains("tcp connect error") && e.to_string().contains("timed out") {
            return TransportError::ConnectTimeout;
        }
        cur = e.source();
    }
    if connect {
        // Connect failed for a reason we could not name (e.g. address unavailable):
        // the request still never left, which is what matters for retry safety.
        TransportError::ConnectRefused
    } else {
        TransportError::Reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// A loopback server that accepts connections, counts them, reads and never answers.
    async fn silent_server() -> (String, Arc<AtomicU64>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let n = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                n.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while matches!(s.read(&mut buf).await, Ok(k) if k > 0) {}
                });
            }
        });
        (format!("http://{addr}"), accepted)
    }

    fn get() -> Outgoing<'static> {
        outgoing::plain_get("/")
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_bounded_pool_never_opens_more_connections_and_a_wait_that_times_out_never_left() {
        let (base, accepted) = silent_server().await;
        let c = Arc::new(client(&base).with_max_connections(1));
        assert_eq!(c.max_connections(), Some(1));
        // A takes the only slot and hangs on the silent server for 300 ms.
        let a = {
            let c = Arc::clone(&c);
            tokio::spawn(async move { send(&c, get(), Some(Duration::from_millis(300))).await })
        };
        while accepted.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // B waits for the slot and its 50 ms end while A still holds it: never sent.
        let b = send(&c, get(), Some(Duration::from_millis(50))).await;
        assert!(
            matches!(b, Reply::Failed(TransportError::ConnectTimeout)),
            "{b:?}"
        );
        let a = a.await.unwrap();
        assert!(
            matches!(a, Reply::Failed(TransportError::PerTryTimeout)),
            "{a:?}"
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_unbounded_pool_dials_for_every_concurrent_attempt() {
        let (base, accepted) = silent_server().await;
        let c = Arc::new(client(&base));
        assert_eq!(c.max_connections(), None);
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..3 {
            let c = Arc::clone(&c);
            set.spawn(async move { send(&c, get(), Some(Duration::from_millis(100))).await });
        }
        while let Some(r) = set.join_next().await {
            assert!(matches!(
                r.unwrap(),
                Reply::Failed(TransportError::PerTryTimeout)
            ));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }
}
