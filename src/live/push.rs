//! Pushing a live run's Prometheus text to a Pushgateway (`--push-gateway`).
//!
//! A scraper reads `--metrics-listen` every 15 s or so: a run shorter than that, the usual
//! CI rehearsal, leaves it one point or none. A Pushgateway keeps what was pushed until the
//! next push, so the run pushes its figures at a fixed interval and once more when it ends,
//! and Prometheus scrapes the gateway whenever it likes: the last push holds the run's
//! final counts. Each run is its own group (`/metrics/job/stormrig/run/<run id>`), so two
//! runs never overwrite each other's figures.
//!
//! The text is the one `/metrics` serves ([`super::telemetry::metrics_text`]); the grouping
//! key's `run` equals the `run` label every series carries, as the gateway requires. The
//! gateway must be on loopback, as every address stormrig sends to.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// The gateway's job label for stormrig's groups.
pub const JOB: &str = "stormrig";

/// How long one push may take before it counts as failed: a gateway that hangs must not
/// hold the run's end.
const PUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how often to push.
#[derive(Debug, Clone, Copy)]
pub struct PushOptions {
    /// The gateway's address (loopback).
    pub gateway: SocketAddr,
    /// Time between pushes while the run goes; one more push ends the run.
    pub every: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("--push-gateway {addr}: only a loopback address is pushed to (127.0.0.1, [::1])")]
    NotLoopback { addr: SocketAddr },
    #[error("--push-gateway {addr}: {what}")]
    Failed { addr: SocketAddr, what: String },
}

/// The path of a run's group on the gateway.
pub fn group_path(run_id: &str) -> String {
    format!("/metrics/job/{JOB}/run/{run_id}")
}

/// Replaces the run's group on the gateway with `text` (HTTP PUT), within [`PUSH_TIMEOUT`].
pub async fn push(gateway: SocketAddr, run_id: &str, text: String) -> Result<(), PushError> {
    if !gateway.ip().is_loopback() {
        return Err(PushError::NotLoopback { addr: gateway });
    }
    let failed = |what: String| PushError::Failed {
        addr: gateway,
        what,
    };
    let once = async {
        let stream = TcpStream::connect(gateway)
            .await
            .map_err(|e| failed(format!("cannot connect: {e}")))?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(format!("handshake: {e}")))?;
        let conn = tokio::spawn(conn);
        let req = Request::builder()
            .method(Method::PUT)
            .uri(group_path(run_id))
            .header(hyper::header::HOST, gateway.to_string())
            .header(
                hyper::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )
            .body(Full::new(Bytes::from(text)))
            .map_err(|e| failed(e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| failed(format!("push: {e}")))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        drop(sender);
        conn.abort();
        if status == StatusCode::OK || status == StatusCode::ACCEPTED {
            Ok(())
        } else {
            let said = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            Err(failed(format!(
                "the gateway answered {status}: {}",
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
