//! Sending one attempt over real sockets, and translating what hyper and the kernel said
//! into the policy core's vocabulary. hyper types stop here; the policy never sees them.
//!
//! The client is a lean per-config pool of hyper HTTP/1.1 connections (`conn::http1`
//! senders over `TcpStream`s with `TCP_NODELAY`), not hyper-util's legacy `Client`: one
//! target per config, so no pool key hashing, no executor hop per request, LIFO reuse.
//!
//! The pool may be bounded ([`HttpClient::with_max_connections`]): an attempt then waits for
//! a connection like a real client with a pool limit does, and that wait is part of the
//! attempt's latency and of its per-try timeout. Unbounded, an overloaded generator opens
//! connections without limit and becomes its own storm (every arrival that finds no idle
//! connection dials, the dials slow everything down, more arrivals find no connection).

use std::error::Error as StdError;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::policy::TransportError;

/// Connection set-up time allowed before an attempt counts as a connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

type Sender = SendRequest<Full<Bytes>>;

/// A keep-alive HTTP/1.1 client for one target (`host:port`): idle connections are reused
/// last-in first-out; a connection whose attempt failed or timed out is never reused.
pub struct HttpClient {
    /// `host:port` dialled for new connections.
    addr: String,
    /// `Host` header value sent with every request (unless the template sets one).
    host: HeaderValue,
    idle: Mutex<Vec<Sender>>,
    /// One permit per connection an attempt may hold at once (None: unbounded). A permit
    /// is taken before a connection is checked out or dialled and returned after the
    /// connection went back to the idle list, so connections never outnumber permits.
    slots: Option<(usize, Arc<Semaphore>)>,
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

    fn take_idle(&self) -> Option<Sender> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn put_idle(&self, s: Sender) {
        if !s.is_closed() {
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
        while let Some(mut s) = self.take_idle() {
            // Readiness involves no request: a closed idle connection is simply dropped.
            if s.ready().await.is_ok() {
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

    /// Opens a new connection within [`CONNECT_TIMEOUT`]. Every failure here means the
    /// request never left the client (refused, timed out, or another connect error).
    async fn dial(&self) -> Result<Sender, TransportError> {
        let stream =
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&*self.addr)).await {
                Err(_) => return Err(TransportError::ConnectTimeout),
                Ok(Err(e)) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(TransportError::ConnectTimeout)
                }
                Ok(Err(e)) if is_local_resource(&e) => return Err(TransportError::LocalResource),
                Ok(Err(_)) => return Err(TransportError::ConnectRefused),
                Ok(Ok(s)) => s,
            };
        let _ = stream.set_nodelay(true);
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|_| TransportError::ConnectRefused)?;
        tokio::spawn(async move {
            // Errors surface through the request that was in flight; nothing to do here.
            let _ = conn.await;
        });
        sender
            .ready()
            .await
            .map_err(|_| TransportError::ConnectRefused)?;
        Ok(sender)
    }
}

/// Builds a client for the target at `base_uri` (`http://host[:port]`, any path ignored):
/// keep-alive, `TCP_NODELAY`, bounded connect time.
pub fn client(base_uri: &str) -> HttpClient {
    let rest = base_uri
        .strip_prefix("http://")
        .or_else(|| base_uri.strip_prefix("HTTP://"))
        .unwrap_or(base_uri);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let addr = if authority.starts_with('[') {
        // IPv6 literal: port after the closing bracket.
        match authority.rfind("]:") {
            Some(_) => authority.to_string(),
            None => format!("{authority}:80"),
        }
    } else if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let host = HeaderValue::from_str(authority).unwrap_or(HeaderValue::from_static("localhost"));
    HttpClient {
        addr,
        host,
        idle: Mutex::new(Vec::new()),
        slots: None,
    }
}

/// What came back from one attempt: a whole response, or a transport failure.
#[derive(Debug)]
pub enum Reply {
    Response {
        status: u16,
        headers: HeaderMap<HeaderValue>,
        body: Bytes,
    },
    Failed(TransportError),
}

impl Reply {
    /// A header's value as text, when present and readable.
    pub fn header(&self, name: &str) -> Option<&str> {
        match self {
            Reply::Response { headers, .. } => headers.get(name).and_then(|v| v.to_str().ok()),
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
pub async fn send(
    client: &HttpClient,
    req: Request<Full<Bytes>>,
    timeout: Option<Duration>,
) -> Reply {
    let connected = AtomicBool::new(false);
    let exchange = async {
        let mut lease = client.checkout().await?;
        connected.store(true, Ordering::Relaxed);
        let resp = match lease.sender.try_send_request(req).await {
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
        let (parts, body) = resp.into_parts();
        let body = read_bounded(body).await.map_err(|e| classify(&e))?;
        // Back to the idle list before the slot is released (when `lease` drops), so an
        // attempt waiting for the slot finds this connection instead of dialling.
        client.put_idle(lease.sender);
        Ok::<_, TransportError>(Reply::Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
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

/// The most of one response body the client keeps: as much as stormrig's own servers
/// relay (the client only ever talks to them), so a layer relays a body whole. The rest is
/// read and dropped: the attempt still ends when the response does, while memory per
/// attempt stays bounded whatever the server sends.
pub const MAX_KEPT_BODY: usize = crate::server::proxy::MAX_BODY;

/// Reads `body` to its end, keeping its first [`MAX_KEPT_BODY`] bytes.
async fn read_bounded(mut body: hyper::body::Incoming) -> Result<Bytes, hyper::Error> {
    let mut kept = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            let room = MAX_KEPT_BODY.saturating_sub(kept.len());
            kept.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    Ok(kept.freeze())
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

    fn get() -> Request<Full<Bytes>> {
        Request::get("/")
            .header("host", "127.0.0.1")
            .body(Full::new(Bytes::new()))
            .unwrap()
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
