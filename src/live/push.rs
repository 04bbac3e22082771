//! Pushing a live run's figures: the Prometheus text to a Pushgateway (`--push-gateway`),
//! samples by Prometheus remote-write (`--remote-write`), or both.
//!
//! A scraper reads `--metrics-listen` every 15 s or so: a run shorter than that, the usual
//! CI rehearsal, leaves it one point or none. So the run pushes its figures at a fixed
//! interval and once more when it ends. A Pushgateway keeps what was pushed until the next
//! push and Prometheus scrapes it whenever it likes: the last push holds the run's final
//! counts. Each run is its own group (`/metrics/job/stormrig/run/<run id>`), so two runs
//! never overwrite each other's figures. A remote-write receiver stores every push as a
//! sample at the push's instant ([`super::remote_write`]).
//!
//! Both carry the families `/metrics` serves ([`super::exposition`]); the grouping key's
//! `run` equals the `run` label every series carries, as the gateway requires. Every
//! receiver must be on loopback, as every address stormrig sends to.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::exposition::{self, Family};
use super::remote_write::{self, Receiver};

/// The gateway's job label for stormrig's groups.
pub const JOB: &str = "stormrig";

/// How long one push may take before it counts as failed: a receiver that hangs must not
/// hold the run's end.
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// One place the figures are pushed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// A Pushgateway's address: the text, as the run's group.
    Gateway(SocketAddr),
    /// A remote-write receiver: timestamped samples.
    RemoteWrite(Receiver),
}

impl std::fmt::Display for Sink {
    /// The flag and value that named it, as errors quote it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sink::Gateway(addr) => write!(f, "--push-gateway {addr}"),
            Sink::RemoteWrite(r) => write!(f, "--remote-write {r}"),
        }
    }
}

/// Where and how often to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// Every receiver (loopback), each pushed to in turn.
    pub sinks: Vec<Sink>,
    /// Time between pushes while the run goes; one more push ends the run.
    pub every: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("--push-gateway {addr}: only a loopback address is pushed to (127.0.0.1, [::1])")]
    NotLoopback { addr: SocketAddr },
    #[error("{sink}: {what}")]
    Failed { sink: String, what: String },
}

/// The path of a run's group on the gateway.
pub fn group_path(run_id: &str) -> String {
    format!("/metrics/job/{JOB}/run/{run_id}")
}

/// Pushes to every sink of `opts`, each push a sample instant of its own.
#[derive(Debug)]
pub struct Pusher {
    opts: PushOptions,
    /// The last remote-write timestamp sent (Unix ms): the next one is later, so two pushes
    /// in the same millisecond never collide as duplicate samples.
    last_ms: i64,
}

impl Pusher {
    pub fn new(opts: PushOptions) -> Pusher {
        Pusher { opts, last_ms: 0 }
    }

    pub fn every(&self) -> Duration {
        self.opts.every
    }

    /// Pushes `families` of run `run_id` to every sink; the first failure is the result
    /// (the other sinks are still pushed to).
    pub async fn push(&mut self, run_id: &str, families: &[Family]) -> Result<(), PushError> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        self.last_ms = now_ms.max(self.last_ms + 1);
        let mut first = Ok(());
        for sink in &self.opts.sinks {
            let pushed = match sink {
                Sink::Gateway(addr) => {
                    let text = exposition::text(families);
                    let head = [(
                        hyper::header::CONTENT_TYPE.as_str(),
                        "text/plain; version=0.0.4; charset=utf-8",
                    )];
                    send(
                        sink,
                        *addr,
                        Method::PUT,
                        &group_path(run_id),
                        &head,
                        text.into(),
                    )
                    .await
                }
                Sink::RemoteWrite(r) => {
                    let head = [
                        ("content-type", "application/x-protobuf"),
                        ("content-encoding", "snappy"),
                        ("x-prometheus-remote-write-version", "0.1.0"),
                        (
                            "user-agent",
                            concat!("stormrig/", env!("CARGO_PKG_VERSION")),
                        ),
                    ];
                    let body = remote_write::body(families, self.last_ms);
                    send(sink, r.addr, Method::POST, &r.path, &head, body.into()).await
                }
            };
            if first.is_ok() {
                first = pushed;
            }
        }
        first
    }
}

/// One HTTP/1.1 request to a loopback receiver within [`PUSH_TIMEOUT`]; any 2xx is taken.
async fn send(
    sink: &Sink,
    to: SocketAddr,
    method: Method,
    path: &str,
    head: &[(&str, &str)],
    body: Bytes,
) -> Result<(), PushError> {
    let failed = |what: String| PushError::Failed {
        sink: sink.to_string(),
        what,
    };
    if !to.ip().is_loopback() {
        return Err(failed(
            "only a loopback address is pushed to (127.0.0.1, [::1])".into(),
        ));
    }
    let once = async {
        let stream = TcpStream::connect(to)
            .await
            .map_err(|e| failed(format!("cannot connect: {e}")))?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(format!("handshake: {e}")))?;
        let conn = tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, to.to_string());
        for (k, v) in head {
            req = req.header(*k, *v);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| failed(e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| failed(format!("push: {e}")))?;
        let status = resp.status();
        let answer = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        drop(sender);
        conn.abort();
        if status.is_success() {
            Ok(())
        } else {
            let said = String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned();
            Err(failed(format!(
                "the receiver answered {status}: {}",
                said.trim()
            )))
        }
    };
    match tokio::time::timeout(PUSH_TIMEOUT, once).await {
        Ok(r) => r,
        Err(_) => Err(failed(format!(
            "no answer within {} s",
            PUSH_TIMEOUT.as_secs()
        ))),
    }
}
