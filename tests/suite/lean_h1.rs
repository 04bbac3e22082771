//! The built-in target's lean HTTP/1.1 connection held against hyper's server: the same
//! raw bytes sent to both (hyper's kept reachable as `H1Server::Hyper`), answers compared
//! byte for byte but for the `date` value; and what only counts can tell (a client that
//! leaves mid-request takes its request out of flight, chunked bodies hash as
//! Content-Length ones, a reset fault closes as before). Every read is bounded in time.

use std::net::SocketAddr;
use std::time::Duration;

use stormrig::scenario::{DedupSpec, Fault, FaultKind};
use stormrig::server::{self, H1Server, Listen, TargetConfig, TargetHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

use crate::support::{always, instant_target};

const BOUND: Duration = Duration::from_secs(5);

async fn start(config: TargetConfig, h1: H1Server) -> TargetHandle {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    server::start_listening_h1(addr, config, Instant::now(), Listen::default(), h1)
        .await
        .expect("target starts")
}

fn with_faults(faults: Vec<Fault>) -> TargetConfig {
    TargetConfig {
        faults,
        ..instant_target()
    }
}

/// How a connection ended after the bytes read.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The server closed (FIN).
    Closed,
    /// The server reset the connection.
    Reset,
    /// Still open when the reads stopped.
    Open,
}

/// Writes `request`, then reads until the server closes or `BOUND` passes (or, with
/// `until_answers`, until that many final answers are complete): the bytes, with every
/// `date` value masked, and how the connection ended.
async fn exchange(addr: SocketAddr, request: &[u8], until_answers: Option<usize>) -> (String, End) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    read_answers(&mut s, until_answers).await
}

async fn read_answers(s: &mut TcpStream, until_answers: Option<usize>) -> (String, End) {
    let mut got = Vec::new();
    let deadline = Instant::now() + BOUND;
    let end = loop {
        if until_answers.is_some_and(|n| complete_answers(&got) >= n) {
            break End::Open;
        }
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout_at(deadline, s.read(&mut chunk)).await {
            Err(_) => break End::Open,
            Ok(Ok(0)) => break End::Closed,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break End::Reset,
            Ok(Err(e)) => panic!("read: {e}"),
        }
    };
    (mask_dates(&String::from_utf8_lossy(&got)), end)
}

/// Final answers (not `100 Continue`) whose Content-Length body is all there.
fn complete_answers(bytes: &[u8]) -> usize {
    let text = String::from_utf8_lossy(bytes);
    let mut rest = &text[..];
    let mut n = 0;
    while let Some(end) = rest.find("\r\n\r\n") {
        let head = &rest[..end];
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |v| v.trim().parse::<usize>().unwrap());
        if rest.len() < end + 4 + len {
            break;
        }
        if !head.starts_with("HTTP/1.1 100 ") {
            n += 1;
        }
        rest = &rest[end + 4 + len..];
    }
    n
}

fn mask_dates(text: &str) -> String {
    text.split("\r\n")
        .map(|l| {
            if l.starts_with("date: ") {
                "date: <masked>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// The same bytes to hyper's server and to the lean one: the same answers, ended the same.
async fn same_as_hyper(config: TargetConfig, request: &[u8], until: Option<usize>) -> String {
    let hyper = start(config.clone(), H1Server::Hyper).await;
    let lean = start(config, H1Server::Lean).await;
    let want = exchange(hyper.addr(), request, until).await;
    let got = exchange(lean.addr(), request, until).await;
    assert_eq!(
        got, want,
        "lean (left) and hyper (right) answered differently"
    );
    assert_eq!(lean.stats().arrivals, hyper.stats().arrivals);
    assert_eq!(
        lean.stats().responses_by_status,
        hyper.stats().responses_by_status
    );
    hyper.shutdown().await;
    lean.shutdown().await;
    want.0
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order_as_hyper_does() {
    let req = b"GET /a HTTP/1.1\r\nhost: x\r\nx-stormrig-request: 1\r\n\r\n\
                HEAD /b HTTP/1.1\r\nhost: x\r\nx-stormrig-request: 2\r\n\r\n\
                POST /c HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc\
                GET /d HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    let text = same_as_hyper(instant_target(), req, None).await;
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 4, "{text}");
    assert!(
        text.ends_with("connection: close\r\ncontent-length: 3\r\ndate: <masked>\r\n\r\nok\n"),
        "{text}"
    );
}

#[tokio::test]
async fn chunked_bodies_and_connection_close_are_answered_as_hyper_does() {
    let req =
        b"POST /c HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\ntrailer: 1\r\n\r\n";
    let text = same_as_hyper(instant_target(), req, None).await;
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
}

#[tokio::test]
async fn http_1_0_closes_unless_kept_alive_as_hyper_does() {
    same_as_hyper(instant_target(), b"GET / HTTP/1.0\r\n\r\n", None).await;
    let text = same_as_hyper(
        instant_target(),
        b"GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n",
        None,
    )
    .await;
    assert!(
        text.starts_with("HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n"),
        "{text}"
    );
}

#[tokio::test]
async fn refused_heads_are_answered_and_closed_as_hyper_does() {
    let mut many = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..101 {
        many.extend_from_slice(format!("x-h{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let text = same_as_hyper(instant_target(), &many, None).await;
    assert!(text.starts_with("HTTP/1.1 431 "), "{text}");

    // A head that never ends, exactly as long as hyper buffers: answered 431 once full.
    let mut endless = b"GET / HTTP/1.1\r\nx-long: ".to_vec();
    endless.resize(8192 + 4096 * 100, b'a');
    let text = same_as_hyper(instant_target(), &endless, None).await;
    assert!(text.starts_with("HTTP/1.1 431 "), "{text}");

    let text = same_as_hyper(
        instant_target(),
        b"GET / HTTP/1.1\r\nbad header\r\n\r\n",
        None,
    )
    .await;
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    let text = same_as_hyper(
        instant_target(),
        b"POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
        None,
    )
    .await;
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
}

#[tokio::test]
async fn status_faults_are_written_as_hyper_writes_them() {
    let config = with_faults(vec![always(FaultKind::Status {
        status: 503,
        retry_after: Some(Duration::from_millis(1500)),
        retry_after_ms: Some(Duration::from_millis(1500)),
        should_retry: Some(true),
        error_code: Some("Throttling".into()),
    })]);
    let req = b"GET / HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\ncontent-length: 2\r\n\r\nhi";
    let text = same_as_hyper(config, req, Some(2)).await;
    assert_eq!(
        text.matches("HTTP/1.1 503 Service Unavailable").count(),
        2,
        "{text}"
    );
}

#[tokio::test]
async fn expect_100_continue_is_answered_when_the_body_is_read_as_hyper_does() {
    let mut answers = Vec::new();
    for h1 in [H1Server::Hyper, H1Server::Lean] {
        let target = start(instant_target(), h1).await;
        let mut s = TcpStream::connect(target.addr()).await.unwrap();
        s.write_all(
            b"PUT /x HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 5\r\n\r\n",
        )
        .await
        .unwrap();
        let mut interim = [0u8; 25];
        timeout(BOUND, s.read_exact(&mut interim))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n", "{h1:?}");
        s.write_all(b"hello").await.unwrap();
        answers.push(read_answers(&mut s, Some(1)).await);
        assert_eq!(target.shutdown().await.arrivals, 1);
    }
    assert_eq!(answers[0], answers[1]);
    assert!(
        answers[1].0.starts_with("HTTP/1.1 200 OK\r\n"),
        "{:?}",
        answers[1]
    );
}

#[tokio::test]
async fn a_reset_fault_ends_the_connection_as_hyper_does() {
    let config = with_faults(vec![always(FaultKind::Reset)]);
    let (text, end) = {
        let hyper = start(config.clone(), H1Server::Hyper).await;
        let lean = start(config, H1Server::Lean).await;
        let req = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        let want = exchange(hyper.addr(), req, None).await;
        let got = exchange(lean.addr(), req, None).await;
        assert_eq!(got, want);
        assert_eq!(lean.shutdown().await.resets, 1);
        assert_eq!(hyper.shutdown().await.resets, 1);
        got
    };
    assert_eq!((text.as_str(), end), ("", End::Closed));
}

#[tokio::test]
async fn a_client_leaving_mid_request_takes_it_out_of_flight() {
    let target = start(with_faults(vec![always(FaultKind::Hang)]), H1Server::Lean).await;
    let mut conns = Vec::new();
    for id in 1..=3u64 {
        let mut s = TcpStream::connect(target.addr()).await.unwrap();
        let req = format!("GET / HTTP/1.1\r\nhost: x\r\nx-stormrig-request: {id}\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        conns.push(s);
    }
    let deadline = Instant::now() + BOUND;
    while target.in_flight() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(target.in_flight(), 3);
    // Two clients give up: their requests leave flight, the third's stays.
    drop(conns.pop());
    drop(conns.pop());
    while target.in_flight() > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(target.in_flight(), 1);
    drop(conns);
    while target.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(target.in_flight(), 0);
    let stats = target.shutdown().await;
    assert_eq!((stats.arrivals, stats.hangs), (3, 3));
}

#[tokio::test]
async fn chunked_bodies_hash_as_content_length_ones() {
    let config = TargetConfig {
        dedup: Some(DedupSpec {
            enabled: true,
            retention: Duration::from_secs(60),
        }),
        ..instant_target()
    };
    let target = start(config, H1Server::Lean).await;
    let by_length = b"POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: k1\r\n\
                      content-length: 11\r\nconnection: close\r\n\r\nhello world";
    let chunked = b"POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: k1\r\n\
                    transfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                    5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    let other = b"POST /pay HTTP/1.1\r\nhost: x\r\nidempotency-key: k1\r\n\
                  transfer-encoding: chunked\r\nconnection: close\r\n\r\n\
                  5\r\nhello\r\n6\r\n earth\r\n0\r\n\r\n";
    let (first, _) = exchange(target.addr(), by_length, None).await;
    let (again, _) = exchange(target.addr(), chunked, None).await;
    let (changed, _) = exchange(target.addr(), other, None).await;
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    assert!(again.ends_with("replayed\n"), "{again}");
    assert!(changed.starts_with("HTTP/1.1 422 "), "{changed}");
    let stats = target.shutdown().await;
    assert_eq!(
        (
            stats.arrivals,
            stats.executions,
            stats.dedup_replays,
            stats.dedup_mismatches
        ),
        (3, 1, 1, 1)
    );
}
