//! Sending one attempt over real sockets, and translating what hyper and the kernel said
//! into the policy core's vocabulary. hyper types stop here; the policy never sees them.

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderValue};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::policy::TransportError;

/// A pooled keep-alive HTTP/1.1 client.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// Connection set-up time allowed before an attempt counts as a connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds a client: keep-alive, `TCP_NODELAY`, bounded connect time.
pub fn client() -> HttpClient {
    let mut conn = HttpConnector::new();
    conn.set_nodelay(true);
    conn.set_connect_timeout(Some(CONNECT_TIMEOUT));
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(conn)
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

/// Sends `req` and reads the whole response within `timeout` (the per-try timeout, already
/// cut to the remaining deadline by the policy). A timed-out attempt's connection is dropped,
/// never returned to the pool half-read.
pub async fn send(
    client: &HttpClient,
    req: Request<Full<Bytes>>,
    timeout: Option<Duration>,
) -> Reply {
    let exchange = async {
        let resp = client.request(req).await.map_err(|e| classify(&e))?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(|e| classify(&e))?.to_bytes();
        Ok::<_, TransportError>(Reply::Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        })
    };
    let result = match timeout {
        Some(t) => match tokio::time::timeout(t, exchange).await {
            Ok(r) => r,
            Err(_) => Err(TransportError::PerTryTimeout),
        },
        None => exchange.await,
    };
    result.unwrap_or_else(Reply::Failed)
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
