//! The built-in target against a minimal hyper client on 127.0.0.1: exact counts, fault
//! windows, resets, hangs, capacity, queue bound, lost responses and Idempotency-Key dedup.
//! Every test is bounded to a few seconds; waits for server-side events are bounded polls
//! followed by exact assertions.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use stormrig::headers;
use stormrig::scenario::{DedupSpec, Dist, Fault, FaultKind, ServiceModel};
use stormrig::server::{self, TargetConfig, TargetHandle};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, timeout, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn model(
    concurrency: u32,
    queue: u32,
    queue_timeout: Option<u64>,
    service_ms: u64,
) -> ServiceModel {
    ServiceModel {
        concurrency,
        queue,
        queue_timeout: queue_timeout.map(ms),
        service_time: Dist::Constant {
            value: ms(service_ms),
        },
        shedding: Default::default(),
    }
}

fn fault(at: u64, length: u64, kind: FaultKind) -> Fault {
    Fault {
        at: ms(at),
        length: ms(length),
        path: None,
        probability: 1.0,
        kind,
    }
}

async fn start(
    model: ServiceModel,
    faults: Vec<Fault>,
    dedup: Option<DedupSpec>,
) -> (TargetHandle, Instant) {
    let epoch = Instant::now();
    let config = TargetConfig {
        model,
        faults,
        seed: 1,
        dedup,
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let t = server::start(addr, config, epoch)
        .await
        .expect("target starts");
    (t, epoch)
}

struct Client {
    send: SendRequest<Full<Bytes>>,
    conn: JoinHandle<()>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        Client { send, conn }
    }

    /// Sends one request; `Err` when the connection failed before a full response.
    async fn send(
        &mut self,
        method: &str,
        hdrs: &[(&str, String)],
        body: &'static str,
    ) -> Result<(StatusCode, hyper::HeaderMap), hyper::Error> {
        let mut req = Request::builder().method(method).uri("/orders");
        for (k, v) in hdrs {
            req = req.header(*k, v);
        }
        let req = req
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let (parts, body) = resp.into_parts();
        body.collect().await?;
        Ok((parts.status, parts.headers))
    }

    async fn get(&mut self) -> Result<StatusCode, hyper::Error> {
        self.send("GET", &[], "").await.map(|(s, _)| s)
    }

    /// Closes the client's side of the connection.
    async fn close(self) {
        drop(self.send);
        self.conn.abort();
        let _ = self.conn.await;
    }
}

fn ids(request: u64, attempt: u32) -> Vec<(&'static str, String)> {
    vec![
        (headers::REQUEST, request.to_string()),
        (headers::ATTEMPT, attempt.to_string()),
    ]
}

/// Polls `cond` every 5 ms for at most 3 s; returns whether it became true.
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(ms(5)).await;
    }
    cond()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrivals_are_counted_exactly_over_keep_alive_connections() {
    let (t, _) = start(model(64, 64, None, 0), vec![], None).await;
    let addr = t.addr();
    let mut tasks = Vec::new();
    for c in 0..5u64 {
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr).await;
            for i in 0..100u64 {
                let (s, _) = client.send("GET", &ids(c * 100 + i, 1), "").await.unwrap();
                assert_eq!(s, StatusCode::OK);
            }
            client.close().await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let s = t.stats();
    assert_eq!(s.arrivals, 500);
    assert_eq!(s.arrivals_per_s.iter().sum::<u64>(), 500);
    assert_eq!(s.served_ok, 500);
    assert_eq!(s.served_ok_per_s.iter().sum::<u64>(), 500);
    assert_eq!(s.responses_by_status.get(&200), Some(&500));
    assert!(
        s.peak_in_flight >= 1 && s.peak_in_flight <= 5,
        "{}",
        s.peak_in_flight
    );
    assert_eq!(t.in_flight(), 0);
    // GETs are not executions.
    assert_eq!(s.executions, 0);
    let fin = t.shutdown().await;
    assert_eq!(fin.arrivals, 500);
}

#[tokio::test]
async fn status_window_is_half_open_and_carries_retry_after_and_error_type() {
    let kind = FaultKind::Status {
        status: 429,
        retry_after: Some(ms(1_500)),
        retry_after_ms: None,
        should_retry: None,
        error_code: Some("ThrottlingException".into()),
    };
    let (t, epoch) = start(model(8, 8, None, 0), vec![fault(150, 300, kind)], None).await;
    let mut c = Client::connect(t.addr()).await;
    // Before the window [150 ms, 450 ms).
    assert_eq!(c.get().await.unwrap(), StatusCode::OK);
    assert!(
        epoch.elapsed() < ms(150),
        "first request was too slow to test the window"
    );
    sleep_until(epoch + ms(200)).await;
    let (s, h) = c.send("GET", &[], "").await.unwrap();
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(h.get("retry-after").unwrap(), "2"); // 1.5 s rounded up to whole seconds
    assert_eq!(h.get(headers::ERROR_TYPE).unwrap(), "ThrottlingException");
    sleep_until(epoch + ms(460)).await;
    assert_eq!(c.get().await.unwrap(), StatusCode::OK);
    let s = t.shutdown().await;
    assert_eq!(s.arrivals, 3);
    assert_eq!(s.responses_by_status.get(&429), Some(&1));
    assert_eq!(s.responses_by_status.get(&200), Some(&2));
    assert_eq!(s.served_ok, 2);
}

#[tokio::test]
async fn reset_closes_the_connection_without_a_response() {
    let (t, _) = start(
        model(8, 8, None, 0),
        vec![fault(0, 60_000, FaultKind::Reset)],
        None,
    )
    .await;
    let mut c = Client::connect(t.addr()).await;
    let err = c
        .get()
        .await
        .expect_err("a reset gives the client no response");
    assert!(
        err.is_incomplete_message() || err.is_closed() || err.to_string().contains("reset"),
        "unexpected client error: {err:?}"
    );
    let s = t.shutdown().await;
    assert_eq!(s.arrivals, 1);
    assert_eq!(s.resets, 1);
    assert!(s.responses_by_status.is_empty());
}

#[tokio::test]
async fn hang_holds_the_request_in_flight_until_the_client_leaves() {
    let (t, _) = start(
        model(8, 8, None, 0),
        vec![fault(0, 60_000, FaultKind::Hang)],
        None,
    )
    .await;
    let mut c = Client::connect(t.addr()).await;
    let r = timeout(ms(200), c.get()).await;
    assert!(r.is_err(), "the client must time out, got {r:?}");
    let s = t.stats();
    assert_eq!((s.arrivals, s.hangs, s.peak_in_flight), (1, 1, 1));
    assert_eq!(
        t.in_flight(),
        1,
        "a hung request is in flight while its client waits"
    );
    c.close().await;
    assert!(
        eventually(|| t.in_flight() == 0).await,
        "in flight after the client left"
    );
    let s = t.shutdown().await;
    assert_eq!(s.hangs, 1);
    assert!(s.responses_by_status.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_slots_bound_service_while_all_requests_are_in_flight() {
    let (t, _) = start(model(2, 16, None, 200), vec![], None).await;
    let addr = t.addr();
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..6u64)
        .map(|i| {
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                c.send("GET", &ids(i, 1), "").await.unwrap().0
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    let elapsed = t0.elapsed();
    let s = t.shutdown().await;
    assert_eq!(s.arrivals, 6);
    assert_eq!(s.peak_in_flight, 6);
    assert_eq!(s.peak_serving, 2);
    assert_eq!(s.served_ok, 6);
    assert!(
        elapsed >= ms(590),
        "6 requests, 2 slots, 200 ms each: {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_sheds_at_once_and_a_long_wait_sheds_on_timeout() {
    // 1 slot, queue of 2, no queue timeout: of 6 simultaneous requests 3 get 503 at once.
    let (t, _) = start(model(1, 2, None, 300), vec![], None).await;
    let addr = t.addr();
    let tasks: Vec<_> = (0..6)
        .map(|_| tokio::spawn(async move { Client::connect(addr).await.get().await.unwrap() }))
        .collect();
    let mut codes = Vec::new();
    for task in tasks {
        codes.push(task.await.unwrap());
    }
    let s = t.shutdown().await;
    assert_eq!(codes.iter().filter(|c| **c == StatusCode::OK).count(), 3);
    assert_eq!(s.shed, 3);
    assert_eq!(s.responses_by_status.get(&503), Some(&3));
    assert_eq!(s.served_ok, 3);

    // 1 slot, room to queue, 100 ms queue timeout, 300 ms service: 1 served, 2 time out.
    let (t, _) = start(model(1, 16, Some(100), 300), vec![], None).await;
    let addr = t.addr();
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            tokio::spawn(async move {
                let code = Client::connect(addr).await.get().await.unwrap();
                (code, Instant::now())
            })
        })
        .collect();
    let mut shed_at = Vec::new();
    for task in tasks {
        let (code, at) = task.await.unwrap();
        if code == StatusCode::SERVICE_UNAVAILABLE {
            shed_at.push(at - t0);
        }
    }
    let s = t.shutdown().await;
    assert_eq!((s.served_ok, s.shed), (1, 2));
    for d in shed_at {
        assert!(
            d >= ms(95) && d < ms(300),
            "shed after the queue timeout: {d:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_faults_change_the_slots_at_run_time() {
    // Capacity 1 instead of 4 for the whole test window.
    let cap1 = fault(0, 60_000, FaultKind::Capacity { concurrency: 1 });
    let (t, _) = start(model(4, 16, None, 100), vec![cap1], None).await;
    let addr = t.addr();
    let tasks: Vec<_> = (0..3)
        .map(|_| tokio::spawn(async move { Client::connect(addr).await.get().await.unwrap() }))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    let s = t.shutdown().await;
    assert_eq!((s.peak_serving, s.served_ok, s.peak_in_flight), (1, 3, 3));

    // No slots for the first 150 ms: queued requests are served when capacity comes back,
    // without any other request finishing to wake them.
    let cap0 = fault(0, 150, FaultKind::Capacity { concurrency: 0 });
    let (t, epoch) = start(model(2, 16, None, 10), vec![cap0], None).await;
    let addr = t.addr();
    let tasks: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { Client::connect(addr).await.get().await.unwrap() }))
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    assert!(epoch.elapsed() >= ms(150));
    let s = t.shutdown().await;
    assert_eq!((s.served_ok, s.peak_serving, s.shed), (2, 2, 0));
}

#[tokio::test]
async fn latency_fault_delays_service() {
    let lat = FaultKind::Latency {
        add: Dist::Constant { value: ms(150) },
    };
    let (t, _) = start(model(4, 4, None, 0), vec![fault(0, 60_000, lat)], None).await;
    let mut c = Client::connect(t.addr()).await;
    let t0 = Instant::now();
    assert_eq!(c.get().await.unwrap(), StatusCode::OK);
    assert!(t0.elapsed() >= ms(150));
    assert_eq!(t.shutdown().await.served_ok, 1);
}

#[tokio::test]
async fn lost_response_executes_then_answers_504_or_nothing() {
    let lost504 = FaultKind::LostResponse { status: Some(504) };
    let (t, _) = start(model(4, 4, None, 0), vec![fault(0, 60_000, lost504)], None).await;
    let mut c = Client::connect(t.addr()).await;
    let (s, _) = c.send("POST", &ids(1, 1), "x").await.unwrap();
    assert_eq!(s, StatusCode::GATEWAY_TIMEOUT);
    let (s, _) = c.send("POST", &ids(1, 2), "x").await.unwrap();
    assert_eq!(s, StatusCode::GATEWAY_TIMEOUT);
    let s = t.shutdown().await;
    assert_eq!(
        (s.executions, s.duplicate_executions, s.lost_responses),
        (2, 1, 2)
    );
    assert_eq!(s.served_ok, 0);
    assert_eq!(s.responses_by_status.get(&504), Some(&2));

    let lost = FaultKind::LostResponse { status: None };
    let (t, _) = start(model(4, 4, None, 0), vec![fault(0, 60_000, lost)], None).await;
    let mut c = Client::connect(t.addr()).await;
    assert!(timeout(ms(200), c.send("POST", &ids(1, 1), "x"))
        .await
        .is_err());
    let s = t.stats();
    assert_eq!((s.executions, s.lost_responses, s.hangs), (1, 1, 0));
    assert!(s.responses_by_status.is_empty());
    c.close().await;
    assert!(eventually(|| t.in_flight() == 0).await);
    t.shutdown().await;
}

#[tokio::test]
async fn work_continues_after_the_client_gives_up() {
    // The server keeps executing an abandoned request, as real servers do; the retry then
    // executes the same logical request a second time.
    let (t, _) = start(model(4, 4, None, 300), vec![], None).await;
    let mut c = Client::connect(t.addr()).await;
    assert!(timeout(ms(100), c.send("POST", &ids(9, 1), "x"))
        .await
        .is_err());
    c.close().await;
    let mut c = Client::connect(t.addr()).await;
    let (s, _) = c.send("POST", &ids(9, 2), "x").await.unwrap();
    assert_eq!(s, StatusCode::OK);
    assert!(eventually(|| t.stats().executions == 2).await);
    let s = t.shutdown().await;
    assert_eq!(
        (s.arrivals, s.executions, s.duplicate_executions),
        (2, 2, 1)
    );
    assert_eq!(s.served_ok, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_key_conflict_mismatch_and_replay() {
    let dedup = DedupSpec {
        enabled: true,
        retention: Duration::from_secs(60),
    };
    let (t, _) = start(model(4, 4, None, 300), vec![], Some(dedup)).await;
    let addr = t.addr();
    let key = |a: u32| {
        let mut h = ids(5, a);
        h.push((headers::IDEMPOTENCY_KEY, "k-1".to_string()));
        h
    };
    let first = tokio::spawn(async move {
        let mut c = Client::connect(addr).await;
        c.send("POST", &key(1), "body-a").await.unwrap().0
    });
    assert!(eventually(|| t.stats().arrivals == 1).await);
    let mut c = Client::connect(addr).await;
    // Same key while the first still executes: 409; another body: 422.
    assert_eq!(
        c.send("POST", &key(2), "body-a").await.unwrap().0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        c.send("POST", &key(3), "body-b").await.unwrap().0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(first.await.unwrap(), StatusCode::OK);
    // Completed: replayed without executing again.
    assert_eq!(
        c.send("POST", &key(4), "body-a").await.unwrap().0,
        StatusCode::OK
    );
    assert_eq!(
        c.send("POST", &key(5), "body-b").await.unwrap().0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let s = t.shutdown().await;
    assert_eq!(s.arrivals, 5);
    assert_eq!((s.executions, s.duplicate_executions), (1, 0));
    assert_eq!(s.served_ok, 1, "a replay is not real service");
    assert_eq!(s.responses_by_status.get(&200), Some(&2));
    assert_eq!(s.responses_by_status.get(&409), Some(&1));
    assert_eq!(s.responses_by_status.get(&422), Some(&2));
}

#[tokio::test]
async fn shutdown_closes_hung_requests_and_stops_accepting() {
    let (t, _) = start(
        model(8, 8, None, 0),
        vec![fault(0, 60_000, FaultKind::Hang)],
        None,
    )
    .await;
    let addr = t.addr();
    let mut c = Client::connect(addr).await;
    let pending = tokio::spawn(async move { c.get().await });
    assert!(eventually(|| t.in_flight() == 1).await);
    let s = timeout(Duration::from_secs(3), t.shutdown())
        .await
        .expect("shutdown is prompt");
    assert_eq!((s.arrivals, s.hangs), (1, 1));
    assert!(
        pending.await.unwrap().is_err(),
        "the hung request is closed unanswered"
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn bind_failure_names_the_address() {
    let (t, _) = start(ServiceModel::default(), vec![], None).await;
    let taken = t.addr();
    let config = TargetConfig {
        model: ServiceModel::default(),
        faults: vec![],
        seed: 1,
        dedup: None,
    };
    let err = match server::start(taken, config, Instant::now()).await {
        Err(e) => e,
        Ok(_) => panic!("binding a taken port must fail"),
    };
    assert!(err.to_string().contains(&taken.to_string()), "{err}");
    t.shutdown().await;
}
