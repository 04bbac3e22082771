//! The fault proxy against tiny in-test upstreams on 127.0.0.1 (no nginx needed): gateway
//! errors (refused, never answers, closes mid-response) classified and counted; faults at
//! the proxy never forwarded; stormrig's headers passed on; the standalone proxy's control
//! endpoint and metrics text; the loopback check; the faults file parser. Bounded, exact.

use std::time::Duration;

use hyper::StatusCode;
use stormrig::headers;
use stormrig::scenario::{Dist, Fault, FaultKind, ServiceModel};
use stormrig::server::proxy::{
    check_loopback, parse_faults, serve_standalone, start_proxy, start_proxy_with, ProxyOptions,
};
use stormrig::server::{TargetConfig, TargetError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

use crate::support::http::{echo_server, local, send};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn config(faults: Vec<Fault>) -> TargetConfig {
    TargetConfig {
        model: ServiceModel {
            concurrency: 64,
            queue: 64,
            queue_timeout: Some(ms(1000)),
            service_time: Dist::Constant { value: ms(0) },
            shedding: Default::default(),
        },
        faults,
        seed: 7,
        dedup: None,
    }
}

fn fault(path: &str, probability: f64, kind: FaultKind) -> Fault {
    Fault {
        at: Duration::ZERO,
        length: Duration::from_secs(600),
        path: Some(path.to_string()),
        probability,
        kind,
    }
}

#[tokio::test]
async fn refused_connection_is_502_and_not_forwarded() {
    let closed = {
        let l = TcpListener::bind(local()).await.unwrap();
        l.local_addr().unwrap()
    }; // dropped: nothing listens there now
    let proxy = start_proxy(local(), closed, config(vec![]), Instant::now())
        .await
        .unwrap();
    for i in 1..=3 {
        let (status, _, _) = send(proxy.addr(), "GET", "/x", i, 1, &[]).await.unwrap();
        assert_eq!(status, StatusCode::BAD_GATEWAY);
    }
    let s = proxy.shutdown().await;
    // The server never saw them: not arrivals at the target, but unreached.
    assert_eq!(s.arrivals, 0);
    assert_eq!(s.arrivals_per_s.iter().sum::<u64>(), 0);
    assert_eq!(s.unreached, 3);
    assert_eq!(s.forwarded, 0);
    assert_eq!(s.responses_by_status.get(&502), Some(&3));
    assert_eq!(s.responses_by_status.len(), 1);
}

#[tokio::test]
async fn upstream_that_never_answers_is_504_after_the_timeout() {
    let listener = TcpListener::bind(local()).await.unwrap();
    let upstream = listener.local_addr().unwrap();
    // Accepts, reads, never answers; holds the sockets open.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let options = ProxyOptions {
        upstream_timeout: ms(300),
        ..ProxyOptions::default()
    };
    let proxy = start_proxy_with(local(), upstream, config(vec![]), Instant::now(), options)
        .await
        .unwrap();
    let t0 = Instant::now();
    let (status, _, _) = send(proxy.addr(), "GET", "/x", 1, 1, &[]).await.unwrap();
    let waited = t0.elapsed();
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert!(waited >= ms(300) && waited < ms(2000), "waited {waited:?}");
    let s = proxy.shutdown().await;
    assert_eq!(s.arrivals, 1);
    assert_eq!(s.forwarded, 1, "the upstream accepted the request");
    assert_eq!(s.responses_by_status.get(&504), Some(&1));
}

#[tokio::test]
async fn upstream_that_closes_mid_response_is_502() {
    let listener = TcpListener::bind(local()).await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial")
                    .await;
                // Dropping the socket closes it 93 bytes short.
            });
        }
    });
    let proxy = start_proxy(local(), upstream, config(vec![]), Instant::now())
        .await
        .unwrap();
    for i in 1..=2 {
        let (status, _, _) = send(proxy.addr(), "GET", "/x", i, 1, &[]).await.unwrap();
        assert_eq!(status, StatusCode::BAD_GATEWAY);
    }
    let s = proxy.shutdown().await;
    assert_eq!(s.arrivals, 2);
    assert_eq!(s.forwarded, 2);
    assert_eq!(s.responses_by_status.get(&502), Some(&2));
    assert_eq!(s.served_ok, 0);
}

#[tokio::test]
async fn relays_upstream_answers_passes_headers_and_keeps_faults_at_the_proxy() {
    let upstream = echo_server().await;
    let faults = vec![
        fault(
            "/status",
            1.0,
            FaultKind::Status {
                status: 503,
                retry_after: Some(Duration::from_secs(2)),
                retry_after_ms: None,
                should_retry: None,
                error_code: None,
            },
        ),
        fault("/reset", 1.0, FaultKind::Reset),
        fault("/hang", 1.0, FaultKind::Hang),
        fault("/lost", 1.0, FaultKind::LostResponse { status: Some(504) }),
        fault(
            "/slow",
            1.0,
            FaultKind::Latency {
                add: Dist::Constant { value: ms(150) },
            },
        ),
    ];
    let proxy = start_proxy(local(), upstream, config(faults), Instant::now())
        .await
        .unwrap();
    let a = proxy.addr();

    let (st, h, body) = send(
        a,
        "POST",
        "/ok",
        41,
        3,
        &[(headers::IDEMPOTENCY_KEY, "k-41")],
    )
    .await
    .unwrap();
    assert_eq!(st, StatusCode::OK);
    assert_eq!(&body[..], b"41 3 k-41 /ok");
    assert_eq!(h.get("x-upstream").unwrap(), "yes");

    let (st, _, body) = send(a, "GET", "/fail", 42, 1, &[]).await.unwrap();
    assert_eq!(
        st,
        StatusCode::SERVICE_UNAVAILABLE,
        "the upstream's own 503"
    );
    assert_eq!(&body[..], b"42 1 - /fail");

    let (st, h, body) = send(a, "GET", "/status", 43, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(h.get("retry-after").unwrap(), "2");
    assert_eq!(&body[..], b"fault\n");

    assert!(send(a, "GET", "/reset", 44, 1, &[]).await.is_err());
    assert!(timeout(ms(200), send(a, "GET", "/hang", 45, 1, &[]))
        .await
        .is_err());

    let (st, _, _) = send(a, "POST", "/lost", 46, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::GATEWAY_TIMEOUT);

    let t0 = Instant::now();
    let (st, _, _) = send(a, "GET", "/slow", 47, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::OK);
    assert!(t0.elapsed() >= ms(150));

    // The hang ends when its client left; wait (bounded) for in-flight to drain.
    let deadline = Instant::now() + ms(2000);
    while proxy.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(ms(10)).await;
    }
    let s = proxy.shutdown().await;
    assert_eq!(s.arrivals, 7);
    // /ok, /fail, /lost, /slow reached the upstream; /status, /reset, /hang did not.
    assert_eq!(s.forwarded, 4);
    assert_eq!(s.resets, 1);
    assert_eq!(s.hangs, 1);
    assert_eq!(s.lost_responses, 1);
    assert_eq!(s.executions, 2, "the forwarded POSTs /ok and /lost");
    assert_eq!(s.served_ok, 2);
    assert_eq!(s.responses_by_status.get(&200), Some(&2));
    assert_eq!(s.responses_by_status.get(&503), Some(&2));
    assert_eq!(s.responses_by_status.get(&504), Some(&1));
}

/// `(name with labels, value)` of every sample line; panics on a malformed line.
fn parse_metrics(text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let kind = rest.split(' ').nth(1).unwrap();
                assert!(["counter", "gauge"].contains(&kind), "{line}");
            }
            continue;
        }
        let (name, value) = line.rsplit_once(' ').expect(line);
        let bare = name.split('{').next().unwrap();
        assert!(
            !bare.is_empty()
                && bare
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        if let Some(labels) = name.strip_prefix(bare) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
                for pair in labels[1..labels.len() - 1].split(',') {
                    let (k, v) = pair.split_once('=').expect(line);
                    assert!(
                        !k.is_empty() && v.starts_with('"') && v.ends_with('"'),
                        "{line}"
                    );
                }
            }
        }
        assert!(
            text.contains(&format!("# TYPE {bare} ")),
            "no TYPE for {bare}"
        );
        assert!(
            text.contains(&format!("# HELP {bare} ")),
            "no HELP for {bare}"
        );
        out.push((name.to_string(), value.parse::<f64>().expect(line)));
    }
    out
}

fn metric(samples: &[(String, f64)], name: &str) -> f64 {
    samples
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

#[tokio::test]
async fn standalone_control_starts_and_stops_faults_and_serves_metrics() {
    let upstream = echo_server().await;
    let faults = vec![Fault {
        at: Duration::ZERO,
        length: Duration::from_secs(600),
        path: None,
        probability: 1.0,
        kind: FaultKind::Status {
            status: 503,
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
            error_code: None,
        },
    }];
    let proxy = serve_standalone(local(), upstream, faults, 1)
        .await
        .unwrap();
    let a = proxy.addr();
    assert_eq!(proxy.control_addr(), a);
    let bearer = format!("Bearer {}", proxy.control_token());
    let auth: &[(&str, &str)] = &[("authorization", bearer.as_str())];

    let mut id = 0;
    let mut round = |expect: StatusCode| {
        id += 1;
        let n = id;
        async move {
            for k in 0..5 {
                let (st, _, _) = send(a, "GET", "/item", n * 10 + k, 1, &[]).await.unwrap();
                assert_eq!(st, expect);
            }
        }
    };
    round(StatusCode::OK).await; // faults are off until started

    let (st, _, body) = send(a, "POST", "/_stormrig/faults/start", 0, 1, auth)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::OK, "{body:?}");
    round(StatusCode::SERVICE_UNAVAILABLE).await;

    let (st, _, _) = send(a, "POST", "/_stormrig/faults/stop", 0, 1, auth)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::OK);
    round(StatusCode::OK).await;

    let (st, _, _) = send(a, "GET", "/_stormrig/faults/start", 0, 1, auth)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::METHOD_NOT_ALLOWED);
    let (st, _, _) = send(a, "GET", "/_stormrig/nope", 0, 1, auth).await.unwrap();
    assert_eq!(st, StatusCode::NOT_FOUND);

    let (st, h, body) = send(a, "GET", "/_stormrig/metrics", 0, 1, auth)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        h.get("content-type").unwrap(),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = String::from_utf8(body.to_vec()).unwrap();
    let m = parse_metrics(&text);
    // Control requests are neither counted nor forwarded.
    assert_eq!(metric(&m, "stormrig_proxy_arrivals_total"), 15.0);
    assert_eq!(metric(&m, "stormrig_proxy_forwarded_total"), 10.0);
    assert_eq!(metric(&m, "stormrig_proxy_in_flight"), 0.0);
    assert!(metric(&m, "stormrig_proxy_peak_in_flight") >= 1.0);
    assert_eq!(
        metric(&m, "stormrig_proxy_responses_total{status=\"503\"}"),
        5.0
    );
    assert_eq!(
        metric(&m, "stormrig_proxy_responses_total{status=\"200\"}"),
        10.0
    );
    assert_eq!(metric(&m, "stormrig_proxy_resets_total"), 0.0);
    assert_eq!(metric(&m, "stormrig_proxy_hangs_total"), 0.0);

    // Without the token, from a page (Origin) or under another name (DNS rebinding): refused,
    // and the faults stay off.
    let (st, _, _) = send(a, "POST", "/_stormrig/faults/start", 0, 1, &[])
        .await
        .unwrap();
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let wrong: &[(&str, &str)] = &[("authorization", "Bearer 0123456789abcdef0123456789abcdef")];
    let (st, _, _) = send(a, "POST", "/_stormrig/faults/start", 0, 1, wrong)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let page: &[(&str, &str)] = &[
        ("authorization", bearer.as_str()),
        ("origin", "http://evil.example"),
        ("content-type", "text/plain"),
    ];
    let (st, _, _) = send(a, "POST", "/_stormrig/faults/start", 0, 1, page)
        .await
        .unwrap();
    assert_eq!(st, StatusCode::FORBIDDEN);
    let mut raw = TcpStream::connect(a).await.unwrap();
    raw.write_all(
        format!(
            "POST /_stormrig/faults/start HTTP/1.1\r\nhost: rebound.example:{}\r\nauthorization: {bearer}\r\ncontent-length: 0\r\n\r\n",
            a.port()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut head = [0u8; 12];
    raw.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 403");
    round(StatusCode::OK).await;

    // /metrics is not reserved: it goes to the upstream.
    let (st, _, body) = send(a, "GET", "/metrics", 99, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::OK);
    assert_eq!(&body[..], b"99 1 - /metrics");

    let s = proxy.shutdown().await;
    // Three rounds of five before the metrics read, one after the refused controls, one
    // /metrics; control requests, refused or not, are never counted.
    assert_eq!(s.arrivals, 21);
    assert_eq!(s.forwarded, 16);
}

#[test]
fn loopback_check_refuses_remote_hosts_unless_named() {
    for ok in [
        "127.0.0.1",
        "127.3.2.1",
        "localhost",
        "LOCALHOST",
        "0x7f000001",
        "2130706433",
        "127.1",
        "::1",
        "[::1]",
        "::ffff:127.0.0.1",
    ] {
        assert!(check_loopback(ok, None).is_ok(), "{ok}");
    }
    for remote in [
        "10.0.0.1",
        "0.0.0.0",
        "example.com",
        "192.168.1.1",
        "::",
        "localhost.example.com",
        // Only the exact name: a resolver may send any other name anywhere.
        "app.localhost",
        "evil.localhost",
        "0x0a000001",
    ] {
        let e = check_loopback(remote, None).unwrap_err();
        assert!(matches!(e, TargetError::Remote { .. }), "{remote}");
        assert!(e.to_string().contains("--allow-remote"), "{e}");
        assert!(
            check_loopback(remote, Some("other.host")).is_err(),
            "{remote}"
        );
        assert!(check_loopback(remote, Some(remote)).is_ok(), "{remote}");
    }
}

#[test]
fn faults_file_is_checked_like_a_scenario() {
    let good = "[[faults]]\nkind = \"status\"\nat = \"0s\"\nfor = \"30s\"\nstatus = 503\nprobability = 0.3\n\n[[faults]]\nkind = \"reset\"\nat = \"5s\"\nfor = \"1s\"\n";
    let f = parse_faults(std::path::Path::new("f.toml"), good).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].probability, 0.3);
    assert!(matches!(f[1].kind, FaultKind::Reset));

    let bad = "[[faults]]\nkind = \"status\"\nat = \"0s\"\nfor = \"30s\"\nstatus = 503\nprobability = 1.5\n";
    let e = parse_faults(std::path::Path::new("f.toml"), bad).unwrap_err();
    assert_eq!(e.line(), Some(6), "{e}");
    assert_eq!(e.field(), Some("faults[0].probability"), "{e}");
    assert!(e.to_string().starts_with("f.toml:6:"), "{e}");

    let unknown = "[[faults]]\nkind = \"status\"\nat = \"0s\"\nfor = \"30s\"\nstatuz = 503\n";
    let e = parse_faults(std::path::Path::new("f.toml"), unknown).unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert!(e.to_string().contains("statuz"), "{e}");
}
