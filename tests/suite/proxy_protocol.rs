//! Upstreams that break HTTP without end, met by the fault proxy: each protocol element the
//! proxy reads from the upstream is bounded, the request gets a classified answer, and every
//! attempt is counted at both ends. All servers are raw sockets on 127.0.0.1, bounded in time.

use std::time::Duration;

use hyper::StatusCode;
use stormrig::headers;
use stormrig::server::proxy::{
    serve_standalone, serve_standalone_with, ProxyOptions, MAX_BODY, MAX_INFORMATIONAL,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::http::{local, send};
use crate::support::process::{bin, cost, tmp_dir, write};

/// A raw server that reads each request head, then hands the connection to `answer`.
/// Returns its address.
async fn raw_server<F, Fut>(answer: F) -> std::net::SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                answer(s).await;
            });
        }
    });
    addr
}

/// A raw server that answers each request head with `100 Continue` without end (until its
/// peer leaves).
async fn endless_continue() -> std::net::SocketAddr {
    raw_server(|mut s| async move {
        let many = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(64);
        while s.write_all(&many).await.is_ok() {}
    })
    .await
}

/// The proxy stops reading interim answers past its bound and answers 502 itself, marked as
/// a protocol error; the request reached the upstream, so it is forwarded.
#[tokio::test]
async fn endless_interim_answers_are_a_marked_502() {
    let upstream = endless_continue().await;
    let proxy = serve_standalone(local(), upstream, Vec::new(), 1)
        .await
        .unwrap();
    for i in 1..=3 {
        let (status, h, body) = tokio::time::timeout(
            Duration::from_secs(20),
            send(proxy.addr(), "GET", "/x", i, 1, &[]),
        )
        .await
        .expect("the proxy answers before the upstream timeout")
        .unwrap();
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        assert_eq!(
            h.get(headers::UPSTREAM).and_then(|v| v.to_str().ok()),
            Some(headers::UPSTREAM_PROTOCOL_ERROR)
        );
        let why = String::from_utf8_lossy(&body);
        assert!(
            why.contains(&format!("more than {MAX_INFORMATIONAL} interim")),
            "{why}"
        );
    }
    assert_eq!(proxy.protocol_errors(), 3);
    let text = proxy.metrics_text();
    assert!(
        text.contains("stormrig_proxy_protocol_errors_total 3"),
        "{text}"
    );
    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (3, 3));
}

/// One request through the proxy at `addr`, answered by the proxy itself with `status` and
/// `x-stormrig-upstream: mark` (within 20 s, far past every bound the proxy holds).
async fn expect_marked(addr: std::net::SocketAddr, status: StatusCode, mark: &str) {
    let (got, h, _) =
        tokio::time::timeout(Duration::from_secs(20), send(addr, "GET", "/x", 1, 1, &[]))
            .await
            .expect("the proxy answers within its bounds")
            .unwrap();
    assert_eq!(got, status);
    assert_eq!(
        h.get(headers::UPSTREAM).and_then(|v| v.to_str().ok()),
        Some(mark)
    );
}

/// The other answers the proxy makes for the upstream are marked and counted apart too: no
/// complete response within the upstream timeout is a 504 marked `timeout`, a body longer
/// than the proxy relays a 502 marked `body-too-large`. Both requests reached the upstream,
/// so both are forwarded.
#[tokio::test]
async fn a_timeout_and_a_body_too_large_are_marked_and_counted() {
    // Never answers (the connection stays open until the proxy gives up on it).
    let silent = raw_server(|mut s| async move {
        let mut sink = [0u8; 64];
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    let options = ProxyOptions {
        upstream_timeout: Duration::from_millis(300),
        ..ProxyOptions::default()
    };
    let proxy = serve_standalone_with(local(), silent, Vec::new(), 1, options)
        .await
        .unwrap();
    expect_marked(
        proxy.addr(),
        StatusCode::GATEWAY_TIMEOUT,
        headers::UPSTREAM_TIMEOUT,
    )
    .await;
    assert_eq!(proxy.upstream_timeouts(), 1);
    assert!(proxy
        .metrics_text()
        .contains("stormrig_proxy_upstream_timeouts_total 1"));
    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (1, 1));

    // Declares and sends one byte more than the proxy relays.
    let large = raw_server(|mut s| async move {
        let body = vec![b'x'; MAX_BODY + 1];
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
        if s.write_all(head.as_bytes()).await.is_ok() {
            let _ = s.write_all(&body).await;
        }
    })
    .await;
    let proxy = serve_standalone(local(), large, Vec::new(), 1)
        .await
        .unwrap();
    expect_marked(
        proxy.addr(),
        StatusCode::BAD_GATEWAY,
        headers::UPSTREAM_BODY_TOO_LARGE,
    )
    .await;
    assert_eq!((proxy.body_too_large(), proxy.upstream_timeouts()), (1, 0));
    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (1, 1));
}

/// A whole run against the endless-100 server as a `url` target: it ends on time, every
/// attempt has an outcome, attempts equal the arrivals counted at the proxy (none lost), and
/// the process's CPU time stays far below a core pinned for the run.
#[test]
fn a_run_against_endless_interim_answers_ends_on_time_with_exact_counts() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let upstream = rt.block_on(endless_continue());
    let dir = tmp_dir("endless-continue");
    let (duration, drain) = (3u64, 5u64);
    let p = write(
        &dir,
        "s.toml",
        &format!(
            "name = \"endless-100\"\nduration = \"{duration}s\"\ndrain = \"{drain}s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nurl = \"http://{upstream}\"\n[[configs]]\npreset = \"naive\"\n"
        ),
    );
    let out = dir.join("out");
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"]).arg(&out).arg(&p);
    let c = cost(cmd);
    // The peer, measured in the same test: the same run against an upstream that answers
    // each request at once, so start-up, pacing and report writing cancel out.
    let plain = rt.block_on(raw_server(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    }));
    let peer_scenario = write(
        &dir,
        "peer.toml",
        &std::fs::read_to_string(&p)
            .unwrap()
            .replace(&upstream.to_string(), &plain.to_string()),
    );
    let mut cmd = bin();
    cmd.args(["run", "--quiet", "--out"])
        .arg(dir.join("peer-out"))
        .arg(&peer_scenario);
    let peer = cost(cmd);
    eprintln!(
        "endless 100: exit {}, wall {:.2} s, cpu {:.2} s; plain upstream: cpu {:.2} s",
        c.code,
        c.wall.as_secs_f64(),
        c.cpu.as_secs_f64(),
        peer.cpu.as_secs_f64()
    );
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert_eq!(peer.code, 0, "{}", peer.stderr);
    // The wall time only as a generous bound (the machine is shared; process start and
    // report writing are in it): before the bound, requests pinned cores past the drain.
    assert!(
        c.wall < Duration::from_secs(duration + drain + 10),
        "took {:?}",
        c.wall
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The run's own timings: its load and its drain ended within duration + drain + 1 s.
    let ran = s["duration_s"].as_f64().unwrap() + s["drain_s"].as_f64().unwrap();
    assert!(ran <= (duration + drain + 1) as f64, "the run took {ran} s");
    let cfg = &s["configs"][0];
    let attempts = cfg["attempts"].as_u64().unwrap();
    assert!(attempts > 0);
    // A core pinned per request would cost about duration + drain CPU-seconds each (the
    // fault before the bound). The bound: one core-second per 20 attempts above the plain
    // peer, 160 times below that. The cost is the interim answers already buffered when the
    // proxy drops the exchange, so it grows with how far the test's own in-process upstream
    // gets ahead of the child under a parallel suite: measured 5.6 to 8.2 ms per attempt
    // alone, 11.5 and 13.4 ms in two full suites (240 attempts, 2.75 and 3.22 CPU-s).
    let extra = c.cpu.saturating_sub(peer.cpu).as_secs_f64();
    let allowed = attempts as f64 * 0.05;
    assert!(
        extra <= allowed,
        "{attempts} attempts cost {extra:.2} CPU-s above the plain peer (allowed {allowed:.2})"
    );
    let by: u64 = cfg["attempts_by_outcome"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(attempts, by, "every attempt has an outcome");
    let arrivals = cfg["downstream_arrivals"].as_u64().unwrap();
    let unreached = cfg["target_unreached"].as_u64().unwrap();
    assert_eq!(
        attempts,
        arrivals + unreached,
        "no attempt lost between the ends"
    );
    assert_eq!(cfg["target_forwarded"].as_u64(), Some(attempts));
    assert_eq!(unreached, 0);
    assert_eq!(cfg["unfinished"].as_u64(), Some(0));
}

/// A raw server that resets the connection after each request head (SO_LINGER 0, then
/// close: an RST, no answer).
async fn resetting() -> std::net::SocketAddr {
    raw_server(|s| async move {
        let _ = socket_linger_zero(&s);
        drop(s);
    })
    .await
}

/// SO_LINGER with a zero timeout: the close that follows sends an RST.
fn socket_linger_zero(s: &tokio::net::TcpStream) -> std::io::Result<()> {
    #[allow(deprecated)]
    s.set_linger(Some(Duration::ZERO))
}

/// An upstream reset is no answer: the proxy closes the client's connection without one,
/// counts the request forwarded and reset, and answers nothing with a status.
#[tokio::test]
async fn an_upstream_reset_is_relayed_as_a_reset() {
    let upstream = resetting().await;
    let proxy = serve_standalone(local(), upstream, Vec::new(), 1)
        .await
        .unwrap();
    for i in 1..=3 {
        let r = tokio::time::timeout(
            Duration::from_secs(20),
            send(proxy.addr(), "GET", "/x", i, 1, &[]),
        )
        .await
        .expect("the proxy ends the exchange before the upstream timeout");
        assert!(r.is_err(), "no answer through the proxy: {r:?}");
    }
    assert_eq!(proxy.upstream_resets(), 3);
    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (3, 3));
    assert!(
        stats.responses_by_status.is_empty(),
        "{:?}",
        stats.responses_by_status
    );
}

/// Two configs that tell a reset from a 5xx answer: one retries resets only, the other 5xx
/// only. A reset relayed as a reset is retried by the first (3 attempts per request) and not
/// by the second; a 502 in its place would do the opposite.
const RESET_OR_5XX: &str = "[[configs]]\nname = \"resets-only\"\nmax_attempts = 3\nbackoff = { kind = \"constant\", delay = \"1ms\" }\nretry_on = { statuses = [], transport = [\"reset\"] }\n[[configs]]\nname = \"5xx-only\"\nmax_attempts = 3\nbackoff = { kind = \"constant\", delay = \"1ms\" }\nretry_on = { statuses = [500, 502, 503, 504] }\n";

/// The built-in target resetting every request itself (a reset fault, probability 1).
const RESET_ALL: &str =
    "[[faults]]\nkind = \"reset\"\nat = \"0s\"\nfor = \"1s\"\nprobability = 1.0\n";

/// A 1 s run at 20 req/s of the two configs of [`RESET_OR_5XX`] against `target`.
fn reset_run(target: &str, extra: &str) -> stormrig::live::LiveOutput {
    let text = format!(
        "name = \"upstream-reset\"\nduration = \"1s\"\ndrain = \"2s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\n{target}\n{extra}{RESET_OR_5XX}"
    );
    crate::support::run_live(&crate::support::plan_of(&text), false)
}

/// Each config's attempts and their outcomes, by config name.
fn outcomes(
    out: &stormrig::live::LiveOutput,
) -> std::collections::BTreeMap<String, (u64, u64, std::collections::BTreeMap<String, u64>)> {
    out.result
        .configs
        .iter()
        .map(|c| {
            let by = c.attempts_by_outcome.clone().into_iter().collect();
            (c.name.clone(), (c.upstream_requests, c.attempts, by))
        })
        .collect()
}

/// The live client through the proxy in front of the resetting server (HTTP/1.1, an RST
/// after each request head) sees resets, not answers: the config that retries resets only
/// retries every one, the one that retries 5xx only none; and every outcome is the one the
/// built-in target's own reset fault gives a direct client. Each attempt was forwarded.
#[test]
fn a_run_through_the_proxy_sees_the_upstreams_resets_as_resets() {
    let rt = crate::support::two_worker_runtime();
    let upstream = rt.block_on(resetting());
    let proxied = reset_run(&format!("url = \"http://{upstream}\""), "");
    let direct = reset_run("builtin = \"default\"", RESET_ALL);
    for c in &proxied.result.configs {
        let want = if c.name == "resets-only" { 3 } else { 1 };
        assert!(c.upstream_requests > 0, "{c:?}");
        assert_eq!(c.attempts, want * c.upstream_requests, "{}: {c:?}", c.name);
        assert_eq!(c.target_forwarded, c.attempts, "{}", c.name);
        assert_eq!(c.downstream_arrivals, c.attempts, "{}", c.name);
        assert_eq!(c.target_unreached, 0, "{}", c.name);
        assert_eq!(
            c.proxy_answered.total(),
            0,
            "{}: {:?}",
            c.name,
            c.proxy_answered
        );
        assert_eq!(c.unfinished, 0, "{}", c.name);
        // Counted apart in the summary as the service's resets, relayed over HTTP/1.1.
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(json["relayed_resets"]["reset"].as_u64(), Some(c.attempts));
        assert_eq!(json["relayed_resets"]["stream_reset"].as_u64(), Some(0));
    }
    for c in &direct.result.configs {
        // The target's own reset faults are not the service's.
        assert_eq!(c.relayed_resets.total(), 0, "{}", c.name);
    }
    assert_eq!(outcomes(&proxied), outcomes(&direct));
}

/// A raw HTTP/2 server (the `h2` crate) that resets every stream with ENHANCE_YOUR_CALM.
async fn h2_resetting() -> std::net::SocketAddr {
    let listener = TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(s).await else {
                    return;
                };
                while let Some(Ok((_req, mut respond))) = conn.accept().await {
                    respond.send_reset(h2::Reason::ENHANCE_YOUR_CALM);
                }
            });
        }
    });
    addr
}

/// Over HTTP/2 the upstream's RST_STREAM reaches the client as an RST_STREAM with the same
/// code (not the INTERNAL_ERROR a failing service gets by default).
#[tokio::test]
async fn an_upstream_rst_stream_is_relayed_with_its_code() {
    use stormrig::scenario::Protocol;
    use stormrig::server::proxy::{ProxyOptions, UpstreamWire};
    let upstream = h2_resetting().await;
    let options = ProxyOptions {
        upstream: UpstreamWire {
            protocol: Protocol::H2c,
            tls: None,
        },
        listen: stormrig::server::Listen {
            protocol: Protocol::H2c,
            tls: None,
        },
        ..ProxyOptions::default()
    };
    let proxy =
        stormrig::server::proxy::serve_standalone_with(local(), upstream, Vec::new(), 1, options)
            .await
            .unwrap();
    let stream = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    for i in 1..=3u64 {
        let req = hyper::Request::builder()
            .uri(format!("http://{}/x", proxy.addr()))
            .header(headers::REQUEST, i)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        let e = tokio::time::timeout(Duration::from_secs(20), tx.send_request(req))
            .await
            .expect("answered before the upstream timeout")
            .expect_err("the stream is reset");
        let mut code = None;
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = next {
            if let Some(h) = err.downcast_ref::<h2::Error>() {
                code = h.reason();
            }
            next = err.source();
        }
        assert_eq!(code, Some(h2::Reason::ENHANCE_YOUR_CALM), "{e:?}");
    }
    assert_eq!(proxy.upstream_resets(), 3);
    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (3, 3));
}

/// Two configs over HTTP/2: one retries stream resets, the other 5xx answers only.
const STREAM_RESET_OR_5XX: &str = "[[configs]]\nname = \"stream-resets\"\nmax_attempts = 3\nbackoff = { kind = \"constant\", delay = \"1ms\" }\nretry_on = { statuses = [], transport = [\"stream-reset\"] }\n[[configs]]\nname = \"5xx-only\"\nmax_attempts = 3\nbackoff = { kind = \"constant\", delay = \"1ms\" }\nretry_on = { statuses = [500, 502, 503, 504] }\n";

/// The live client over h2c through the proxy in front of a raw HTTP/2 server that resets
/// every stream: each attempt's outcome is `stream-reset`, as against the built-in target's
/// own reset fault over h2c, and the config retrying stream resets retries each one.
#[test]
fn a_run_through_the_proxy_sees_the_upstreams_rst_stream_as_stream_reset() {
    let rt = crate::support::two_worker_runtime();
    let upstream = rt.block_on(h2_resetting());
    let run = |target: &str, extra: &str| {
        let text = format!(
            "name = \"upstream-rst-stream\"\nduration = \"1s\"\ndrain = \"2s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\n{target}\nprotocol = \"h2c\"\n{extra}{STREAM_RESET_OR_5XX}"
        );
        crate::support::run_live(&crate::support::plan_of(&text), false)
    };
    let proxied = run(&format!("url = \"http://{upstream}\""), "");
    let direct = run("builtin = \"default\"", RESET_ALL);
    for c in &proxied.result.configs {
        let want = if c.name == "stream-resets" { 3 } else { 1 };
        assert!(c.upstream_requests > 0, "{c:?}");
        assert_eq!(c.attempts, want * c.upstream_requests, "{}: {c:?}", c.name);
        assert_eq!(
            c.attempts_by_outcome.get("stream-reset").copied(),
            Some(c.attempts),
            "{}: {:?}",
            c.name,
            c.attempts_by_outcome
        );
        assert_eq!(c.target_forwarded, c.attempts, "{}", c.name);
        assert_eq!(c.proxy_answered.total(), 0, "{}", c.name);
        let json = serde_json::to_value(c).unwrap();
        assert_eq!(
            json["relayed_resets"]["stream_reset"].as_u64(),
            Some(c.attempts)
        );
        assert_eq!(json["relayed_resets"]["reset"].as_u64(), Some(0));
    }
    for c in &direct.result.configs {
        assert_eq!(c.relayed_resets.total(), 0, "{}", c.name);
    }
    assert_eq!(outcomes(&proxied), outcomes(&direct));
}
