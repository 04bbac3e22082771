//! Connection-level faults on the response path, on loopback: a bandwidth fault through the
//! proxy's JSON API delivers a body no faster than its rate; the built-in target's slicer
//! writes its answer in slices (read frame by frame); a slow close keeps the connection
//! open for its delay after a complete answer. Counts stay exact. Bounded in count and time.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use stormrig::headers;
use stormrig::scenario::{FaultKind, ServiceModel};
use stormrig::server::{self, TargetConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

use crate::support::always;
use crate::support::http::{fault_proxy, local, send, send_body};

async fn target(kind: FaultKind) -> server::TargetHandle {
    let config = TargetConfig {
        model: ServiceModel::default(),
        faults: vec![always(kind)],
        seed: 1,
        dedup: None,
    };
    server::start(local(), config, Instant::now())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_bandwidth_fault_added_through_the_api_delivers_no_faster_than_its_rate() {
    let (proxy, a, bearer) = fault_proxy().await;
    let auth: &[(&str, &str)] = &[("authorization", &bearer)];
    let rate = 400u64;
    let fault = format!(r#"{{"kind":"bandwidth","bytes_per_s":{rate},"path":"/slow"}}"#);
    let (st, _, body) = send_body(a, "POST", "/_stormrig/faults", 0, 1, auth, fault.into())
        .await
        .unwrap();
    let added: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(st, StatusCode::CREATED, "{added}");
    assert_eq!(added["kind"], "bandwidth");
    assert_eq!(added["bytes_per_s"], rate);

    // The echo upstream answers with the path in its body: a long path, a known long body.
    let path = format!("/slow/{}", "x".repeat(150));
    let shaped = 3u64;
    for request in 1..=shaped {
        let started = Instant::now();
        let (st, _, body) = send(a, "GET", &path, request, 1, &[]).await.unwrap();
        let took = started.elapsed();
        assert_eq!(st, StatusCode::OK);
        assert!(body.ends_with(path.as_bytes()), "the body arrives whole");
        let floor = Duration::from_secs_f64(body.len() as f64 / rate as f64);
        assert!(
            took >= floor,
            "{} bytes in {took:?}, under {floor:?}",
            body.len()
        );
    }
    // Outside the fault's path, answers are not shaped (and not counted as hit).
    let (st, _, _) = send(a, "GET", "/fast", 99, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::OK);

    let (_, _, body) = send(a, "GET", "/_stormrig/faults", 0, 1, auth)
        .await
        .unwrap();
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["faults"][0]["hits"], shaped, "{list}");
    let text = proxy.metrics_text();
    assert!(
        text.contains("stormrig_proxy_fault_active{id=\"1\",kind=\"bandwidth\"} 1"),
        "{text}"
    );
    let stats = proxy.shutdown().await;
    assert_eq!(stats.arrivals, shaped + 1);
    assert_eq!(stats.forwarded, shaped + 1);
}

#[tokio::test]
async fn the_slicer_writes_the_answer_in_slices_with_pauses_between_them() {
    let delay = Duration::from_millis(100);
    let t = target(FaultKind::Slicer {
        slice_bytes: 1,
        delay,
    })
    .await;
    let stream = TcpStream::connect(t.addr()).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let requests = 2u64;
    for request in 1..=requests {
        let req = Request::get("/")
            .header("host", "127.0.0.1")
            .header(headers::REQUEST, request)
            .header(headers::ATTEMPT, 1)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = tx.send_request(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let mut body = resp.into_body();
        let mut frames = Vec::new();
        let mut first: Option<Instant> = None;
        while let Some(frame) = timeout(Duration::from_secs(10), body.frame())
            .await
            .unwrap()
        {
            if let Ok(data) = frame.unwrap().into_data() {
                first.get_or_insert_with(Instant::now);
                frames.push(data);
            }
        }
        let whole: Vec<u8> = frames.concat();
        assert_eq!(whole, b"ok\n");
        // One frame per slice: each pause outlasts what a read takes, so no two slices
        // reach the client in one read.
        assert!(frames.iter().all(|f| f.len() == 1), "{frames:?}");
        let spread = first.unwrap().elapsed();
        assert!(spread >= delay * 2, "3 slices over {spread:?}");
    }
    let stats = t.shutdown().await;
    assert_eq!(stats.arrivals, requests);
    assert_eq!(stats.served_ok, requests);
}

#[tokio::test]
async fn a_slow_close_holds_the_connection_open_after_a_whole_answer() {
    let delay = Duration::from_millis(400);
    let t = target(FaultKind::SlowClose { delay }).await;
    let mut stream = TcpStream::connect(t.addr()).await.unwrap();
    let sent = Instant::now();
    stream
        .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-stormrig-request: 1\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut whole_at = None;
    let mut buf = [0u8; 1024];
    loop {
        let n = timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.ends_with(b"\r\n\r\nok\n") {
            whole_at.get_or_insert_with(Instant::now);
        }
    }
    let closed = sent.elapsed();
    let text = String::from_utf8_lossy(&got).to_lowercase();
    assert!(text.starts_with("http/1.1 200"), "{text}");
    assert!(text.contains("connection: close"), "{text}");
    let whole = whole_at.expect("the whole answer arrived before the close") - sent;
    assert!(closed >= delay, "closed after {closed:?}");
    assert!(
        closed - whole >= delay / 2,
        "answer at {whole:?}, close at {closed:?}"
    );
    let stats = t.shutdown().await;
    assert_eq!(stats.arrivals, 1);
    assert_eq!(stats.served_ok, 1);
}
