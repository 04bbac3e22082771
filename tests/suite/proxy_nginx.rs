//! The fault proxy in front of a real nginx (Debian's package) started by the test with
//! `targets/nginx/run.sh`: arrivals at the proxy equal the requests sent; forwarded equals
//! the lines in nginx's access log exactly; a proxy-injected 503 never reaches nginx;
//! nginx's own 503s (`/fail`) are relayed and their count matches nginx's log; every line
//! of a 3-config run's log joins to exactly one row of its attempt log.
//!
//! Without nginx this test fails, saying how to install it (`tests/run.sh` installs it first).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::support::nginx::Nginx;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use stormrig::headers;
use stormrig::scenario::{Dist, Fault, FaultKind, ServiceModel};
use stormrig::server::proxy::start_proxy;
use stormrig::server::TargetConfig;
use tokio::net::TcpStream;
use tokio::time::Instant;

async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    request: u64,
    attempt: u32,
) -> (StatusCode, Bytes) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header(headers::REQUEST, request)
        .header(headers::ATTEMPT, attempt)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = tx.send_request(req).await.unwrap();
    let status = resp.status();
    (status, resp.into_body().collect().await.unwrap().to_bytes())
}

/// `(request id, attempt, status, method, uri)` of a log line.
fn fields(line: &str) -> (u64, u32, u16, String, String) {
    let f: Vec<&str> = line.split(' ').collect();
    (
        f[0].parse().expect(line),
        f[1].parse().expect(line),
        f[2].parse().expect(line),
        f[3].to_string(),
        f[4].to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_counts_match_nginx_access_log_exactly() {
    let nginx = Nginx::start();
    let faults = vec![
        Fault {
            at: Duration::ZERO,
            length: Duration::from_secs(600),
            path: Some("/item".into()),
            probability: 0.3,
            kind: FaultKind::Status {
                status: 503,
                retry_after: None,
                retry_after_ms: None,
                should_retry: None,
                error_code: None,
            },
        },
        Fault {
            at: Duration::ZERO,
            length: Duration::from_secs(600),
            path: Some("/item/reset".into()),
            probability: 1.0,
            kind: FaultKind::Reset,
        },
    ];
    let config = TargetConfig {
        model: ServiceModel {
            concurrency: 64,
            queue: 1024,
            queue_timeout: None,
            service_time: Dist::Constant {
                value: Duration::ZERO,
            },
            shedding: Default::default(),
        },
        faults,
        seed: 11,
        dedup: None,
    };
    let proxy = start_proxy(
        "127.0.0.1:0".parse().unwrap(),
        nginx.addr(),
        config,
        Instant::now(),
    )
    .await
    .unwrap();
    let a = proxy.addr();

    // 240 requests to /item (a quarter POSTs, some second attempts) from 8 clients at once,
    // then 40 to nginx's failing path.
    const N: u64 = 240;
    let mut tasks = Vec::new();
    for w in 0..8u64 {
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            for i in (w..N).step_by(8) {
                let id = i + 1;
                let method = if id % 4 == 0 { "POST" } else { "GET" };
                let attempt = 1 + (id % 3) as u32;
                let (st, body) = send(a, method, &format!("/item?i={id}"), id, attempt).await;
                seen.push((id, attempt, st, body));
            }
            seen
        }));
    }
    let mut seen = Vec::new();
    for t in tasks {
        seen.extend(t.await.unwrap());
    }
    const FAILS: u64 = 40;
    let mut client_503_from_nginx = 0;
    for k in 0..FAILS {
        let (st, _) = send(a, "GET", "/fail", 10_000 + k, 1).await;
        assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
        client_503_from_nginx += 1;
    }

    let injected: BTreeSet<u64> = seen
        .iter()
        .filter(|(_, _, st, body)| {
            *st == StatusCode::SERVICE_UNAVAILABLE && &body[..] == b"fault\n"
        })
        .map(|(id, ..)| *id)
        .collect();
    let ok: BTreeSet<u64> = seen
        .iter()
        .filter(|(_, _, st, body)| *st == StatusCode::OK && &body[..] == b"ok\n")
        .map(|(id, ..)| *id)
        .collect();
    assert_eq!(
        injected.len() + ok.len(),
        N as usize,
        "every answer is nginx's 200 or a fault"
    );
    assert!(
        injected.len() > 40 && injected.len() < 110,
        "probability 0.3 of {N}: {}",
        injected.len()
    );

    let expected_lines = ok.len() + FAILS as usize;
    let log = nginx.log_with(expected_lines).await;
    let stats = proxy.shutdown().await;
    eprintln!(
        "sent {} | injected 503 {} | nginx 200 {} | nginx 503 {} | arrivals {} | forwarded {} | log lines {} | peak in flight {}",
        N + FAILS,
        injected.len(),
        ok.len(),
        FAILS,
        stats.arrivals,
        stats.forwarded,
        log.len(),
        stats.peak_in_flight
    );

    assert_eq!(
        stats.arrivals,
        N + FAILS,
        "arrivals at the proxy = requests sent"
    );
    assert_eq!(
        stats.forwarded as usize,
        log.len(),
        "forwarded = lines in nginx's access log"
    );
    assert_eq!(log.len(), expected_lines);

    let parsed: Vec<_> = log.iter().map(|l| fields(l)).collect();
    let logged_items: BTreeSet<u64> = parsed
        .iter()
        .filter(|(_, _, _, _, uri)| uri.starts_with("/item"))
        .map(|(id, ..)| *id)
        .collect();
    assert_eq!(
        logged_items, ok,
        "nginx saw exactly the requests the proxy did not fail"
    );
    assert!(injected.is_disjoint(&logged_items));
    // Request id and attempt reached nginx's log intact, with the method and URI.
    for (id, attempt, status, method, uri) in &parsed {
        if uri.starts_with("/item") {
            assert_eq!(*attempt, 1 + (*id % 3) as u32);
            assert_eq!(*status, 200);
            assert_eq!(method, if id % 4 == 0 { "POST" } else { "GET" });
            assert_eq!(uri, &format!("/item?i={id}"));
        }
    }
    let nginx_503 = parsed.iter().filter(|p| p.2 == 503).count();
    assert_eq!(nginx_503, client_503_from_nginx);
    assert_eq!(nginx_503, FAILS as usize);

    assert_eq!(
        stats.responses_by_status.get(&503).copied().unwrap_or(0),
        injected.len() as u64 + FAILS
    );
    assert_eq!(
        stats.responses_by_status.get(&200).copied().unwrap_or(0),
        ok.len() as u64
    );
    assert_eq!(stats.served_ok, ok.len() as u64);
    assert_eq!(
        stats.executions,
        ok.iter().filter(|id| *id % 4 == 0).count() as u64,
        "forwarded POSTs"
    );
}

#[tokio::test]
async fn reset_faults_never_reach_nginx() {
    let nginx = Nginx::start();
    let faults = vec![Fault {
        at: Duration::ZERO,
        length: Duration::from_secs(600),
        path: Some("/gone".into()),
        probability: 1.0,
        kind: FaultKind::Reset,
    }];
    let config = TargetConfig {
        model: ServiceModel::default(),
        faults,
        seed: 3,
        dedup: None,
    };
    let proxy = start_proxy(
        "127.0.0.1:0".parse().unwrap(),
        nginx.addr(),
        config,
        Instant::now(),
    )
    .await
    .unwrap();
    let a = proxy.addr();
    for id in 1..=10u64 {
        let stream = TcpStream::connect(a).await.unwrap();
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = Request::builder()
            .uri("/gone")
            .header(headers::REQUEST, id)
            .body(Full::new(Bytes::new()))
            .unwrap();
        assert!(tx.send_request(req).await.is_err(), "reset: no answer");
    }
    for id in 11..=15u64 {
        assert_eq!(send(a, "GET", "/", id, 1).await.0, StatusCode::OK);
    }
    let log = nginx.log_with(5).await;
    let s = proxy.shutdown().await;
    assert_eq!(s.arrivals, 15);
    assert_eq!(s.resets, 10);
    assert_eq!(s.forwarded, 5);
    assert_eq!(log.len(), 5);
}

/// The full engine in front of nginx: for each config of a shipped scenario (its target
/// switched to nginx, its reset window kept, shortened), the requests in nginx's access log
/// equal the proxy's forwarded count exactly, and arrivals at the proxy equal the client's
/// attempts.
#[test]
fn live_run_through_the_proxy_matches_nginx_log_per_config() {
    let nginx = Nginx::start();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/connection-resets.toml");
    let base = stormrig::plan::load(&path).expect("shipped scenario plans");
    assert!(base.configs.len() >= 2);
    let rt = crate::support::two_worker_runtime();
    for config in &base.configs {
        let mut plan = base.clone();
        plan.configs = vec![config.clone()];
        plan.scenario.duration = Duration::from_millis(1500);
        nginx.target(&mut plan);
        let before = nginx.log().len();
        let out = rt.block_on(async {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            let opts = stormrig::live::RunOptions {
                attempt_log: false,
                progress: false,
                abort_when: None,
                ..Default::default()
            };
            stormrig::live::run(&plan, &opts, rx).await.expect("run")
        });
        let c = &out.result.configs[0];
        let logged = rt
            .block_on(nginx.log_with(before + c.target_forwarded as usize))
            .len()
            - before;
        assert!(c.upstream_requests > 0);
        assert_eq!(
            c.downstream_arrivals, c.attempts,
            "{}: proxy arrivals vs client attempts",
            c.name
        );
        assert_eq!(
            logged as u64, c.target_forwarded,
            "{}: nginx log vs forwarded",
            c.name
        );
        assert!(
            c.target_forwarded < c.attempts,
            "{}: the reset window kept some attempts from nginx",
            c.name
        );
    }
}

/// A server log joins to the run: every line nginx wrote during a 3-config live run names
/// the run, the config, the request and the attempt, and matches exactly one sent attempt
/// of the attempt log; its time is no earlier than the attempt's send time.
#[test]
fn every_nginx_line_of_a_three_config_run_joins_one_attempt_log_row() {
    let nginx = Nginx::start();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/downstream-503-10s.toml");
    let mut plan = stormrig::plan::load(&path).expect("shipped scenario plans");
    plan.configs.truncate(3);
    assert_eq!(plan.configs.len(), 3);
    plan.scenario.duration = Duration::from_millis(1500);
    nginx.target(&mut plan);
    // Half the attempts fail at the proxy: retries reach nginx as attempts 2, 3, ...
    for f in &mut plan.scenario.faults {
        f.probability = 0.5;
    }
    let rt = crate::support::two_worker_runtime();
    let out = rt.block_on(async {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = stormrig::live::RunOptions {
            attempt_log: true,
            ..Default::default()
        };
        stormrig::live::run(&plan, &opts, rx).await.expect("run")
    });
    let forwarded: u64 = out.result.configs.iter().map(|c| c.target_forwarded).sum();
    let log = rt.block_on(nginx.log_with(forwarded as usize));
    assert_eq!(log.len() as u64, forwarded, "nginx lines vs forwarded");
    let run = out
        .result
        .run
        .as_ref()
        .expect("a live run has its identity");
    let started = humantime::parse_rfc3339(&run.started_at).expect("RFC 3339");
    let started = started
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();

    let mut rows: std::collections::HashMap<(String, u64, u32), Vec<f64>> = Default::default();
    for r in &out.attempts {
        if let Some(sent) = r.sent_s {
            rows.entry((r.config.clone(), r.request, r.attempt))
                .or_default()
                .push(sent);
        }
    }
    let mut joined = BTreeSet::new();
    let mut per_config = std::collections::BTreeMap::<String, u64>::new();
    let mut retries = 0;
    for line in &log {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 10, "{line}");
        let key = (
            f[7].to_string(),
            f[0].parse::<u64>().expect(line),
            f[1].parse::<u32>().expect(line),
        );
        assert_eq!(f[8], run.id, "{line}");
        let sent = rows
            .get(&key)
            .unwrap_or_else(|| panic!("no attempt-log row for {line}"));
        assert_eq!(sent.len(), 1, "{line}: {} rows", sent.len());
        assert!(
            joined.insert(key.clone()),
            "two lines for one attempt: {line}"
        );
        let msec: f64 = f[5].parse().expect(line);
        assert!(
            msec + 0.002 >= started + sent[0],
            "{line}: logged before it was sent ({} s)",
            started + sent[0]
        );
        *per_config.entry(key.0).or_default() += 1;
        retries += u64::from(key.2 > 1);
    }
    for c in &out.result.configs {
        assert_eq!(
            per_config.get(&c.name).copied(),
            Some(c.target_forwarded),
            "{}",
            c.name
        );
    }
    assert!(retries > 0, "retries reached nginx too");
}
