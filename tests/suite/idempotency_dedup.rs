//! Idempotency-Key dedup on the built-in target through HTTP: replays, 409 while executing,
//! 422 for another body, key expiry after the retention window, and the dedup counters.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use stormrig::headers;
use stormrig::scenario::{DedupSpec, Dist, Fault, FaultKind, ServiceModel};
use stormrig::server::{self, TargetConfig, TargetHandle};
use tokio::net::TcpStream;
use tokio::time::Instant;

fn model(service_ms: u64) -> ServiceModel {
    ServiceModel {
        concurrency: 8,
        queue: 8,
        queue_timeout: None,
        service_time: Dist::Constant {
            value: Duration::from_millis(service_ms),
        },
        shedding: Default::default(),
    }
}

async fn start(service_ms: u64, faults: Vec<Fault>, retention_ms: u64) -> TargetHandle {
    let config = TargetConfig {
        model: model(service_ms),
        faults,
        seed: 1,
        dedup: Some(DedupSpec {
            enabled: true,
            retention: Duration::from_millis(retention_ms),
        }),
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    server::start(addr, config, Instant::now()).await.unwrap()
}

/// One POST on a fresh connection: request id, attempt, key, amount, body.
async fn post(
    addr: SocketAddr,
    request: u64,
    attempt: u32,
    key: &str,
    body: &'static str,
) -> StatusCode {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::post("/payments")
        .header(headers::REQUEST, request)
        .header(headers::ATTEMPT, attempt)
        .header(headers::IDEMPOTENCY_KEY, key)
        .header(headers::AMOUNT, 25)
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let status = resp.status();
    resp.into_body().collect().await.unwrap();
    status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_conflict_mismatch_and_expiry_are_counted() {
    let t = start(200, vec![], 400).await;
    let addr = t.addr();
    let first = tokio::spawn(async move { post(addr, 1, 1, "k", "a").await });
    let end = Instant::now() + Duration::from_secs(3);
    while t.stats().arrivals < 1 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(post(addr, 1, 2, "k", "a").await, StatusCode::CONFLICT);
    assert_eq!(
        post(addr, 1, 3, "k", "b").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(first.await.unwrap(), StatusCode::OK);
    assert_eq!(post(addr, 1, 4, "k", "a").await, StatusCode::OK, "replayed");
    assert_eq!(
        post(addr, 1, 5, "k", "b").await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let s = t.stats();
    assert_eq!(
        (s.executions, s.duplicate_executions, s.debited),
        (1, 0, 25)
    );
    assert_eq!(
        (s.dedup_replays, s.dedup_conflicts, s.dedup_mismatches),
        (1, 1, 2)
    );
    // After the retention window the key is forgotten: the same request executes again.
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(post(addr, 1, 6, "k", "a").await, StatusCode::OK);
    let s = t.shutdown().await;
    assert_eq!(s.arrivals, 6);
    assert_eq!(
        (s.executions, s.duplicate_executions, s.extra_executions),
        (2, 1, 1)
    );
    assert_eq!((s.debited, s.extra_debited), (50, 25));
    assert_eq!(
        (s.dedup_replays, s.dedup_conflicts, s.dedup_mismatches),
        (1, 1, 2)
    );
    assert_eq!(s.served_ok, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_is_lost_like_any_response_and_never_executes() {
    let lost = Fault {
        at: Duration::ZERO,
        length: Duration::from_secs(60),
        path: None,
        probability: 1.0,
        kind: FaultKind::LostResponse { status: Some(504) },
    };
    let t = start(0, vec![lost], 60_000).await;
    let addr = t.addr();
    for attempt in 1..=3 {
        assert_eq!(
            post(addr, 7, attempt, "k7", "x").await,
            StatusCode::GATEWAY_TIMEOUT
        );
    }
    let s = t.shutdown().await;
    assert_eq!((s.executions, s.duplicate_executions), (1, 0));
    assert_eq!((s.dedup_replays, s.lost_responses), (2, 3));
    assert_eq!(s.responses_by_status.get(&504), Some(&3));
}
