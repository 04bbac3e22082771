//! gRPC services rehearsed through the counting fault proxy, held against real gRPC
//! servers: the gRPC project's own server (grpcio, C core; `tests/python/grpc_server.py`)
//! as a `url` target, and nginx's `grpc_pass` in front of it. Counts come from each side
//! itself: the client's attempts, the proxy's arrivals and forwards, the real server's calls
//! per `x-stormrig-config`, nginx's access log.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use stormrig::report::diff;
use stormrig::scenario::{Protocol, ServiceModel};
use stormrig::server::proxy::{start_proxy_with, ProxyOptions, UpstreamWire};
use stormrig::server::{Listen, TargetConfig};

use crate::support::grpc_server::{Calls, GrpcServer};
use crate::support::nginx::Nginx;
use crate::support::{self, config_named};

/// The shipped gRPC storm, shortened to 3 s at 100 calls/s with UNAVAILABLE from 1 s to
/// 2 s, against `target` (a `[target]` line: `builtin = "default"` or `url = "..."`).
fn storm(target: &str) -> String {
    let shipped =
        std::fs::read_to_string(support::repo_root().join("scenarios/grpc-unavailable-storm.toml"))
            .unwrap();
    let text = shipped
        .replace("builtin = \"default\"", target)
        .replace("duration = \"10s\"", "duration = \"3s\"")
        .replace("rate = 200.0", "rate = 100.0")
        .replace("at = \"3s\"", "at = \"1s\"")
        .replace("for = \"5s\"", "for = \"1s\"");
    assert!(text.contains(target) && text.contains("\"3s\""), "{text}");
    text
}

/// Per config: what the client sent equals what the proxy received, and what the proxy
/// forwarded is `forwarded(config)`, which the real side counted.
fn check_forwarded(
    run: &stormrig::live::LiveOutput,
    forwarded: impl Fn(&str) -> u64,
) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for c in &run.result.configs {
        assert_eq!(c.attempts, c.downstream_arrivals, "{}", c.name);
        assert!(c.target_forwarded > 0, "{}", c.name);
        assert_eq!(forwarded(&c.name), c.target_forwarded, "{}", c.name);
        // The proxy's faults answered every failure; what reached the real server
        // succeeded, and nothing else did.
        assert_eq!(c.successes, c.target_forwarded, "{}", c.name);
        seen.insert(c.name.clone(), c.target_forwarded);
    }
    seen
}

#[test]
fn a_real_grpc_server_receives_what_the_proxy_forwarded_and_budgets_match_the_builtin_run() {
    let mut server = GrpcServer::start();
    let url = format!("url = \"http://{}\"", server.addr);
    let plan = support::plan_of(&storm(&url));
    let through = support::run_live(&plan, false);
    let calls = server.calls();
    println!("grpcio's calls: {calls:?}");
    check_forwarded(&through, |name| {
        calls.get(name).copied().unwrap_or_default().calls
    });
    let mut timed = 0;
    for planned in &plan.configs {
        // A config with a deadline or a per-try timeout sends `grpc-timeout` with every
        // call, and the real server sees it (shortened, not dropped); one without sends none.
        let c = &calls[&planned.name];
        let has = planned.config.deadline.is_some() || planned.config.per_try_timeout.is_some();
        let want = if has { c.calls } else { 0 };
        assert_eq!(c.deadlines, want, "{}", planned.name);
        timed += usize::from(has);
    }
    assert!(timed > 0, "some config has a deadline to pass on");

    // The same storm against the built-in target: the budget refuses as many retries.
    let builtin = support::run_live(&support::plan_of(&storm("builtin = \"default\"")), false);
    let tol = diff::live_default(diff::Class::Timed);
    for name in ["grpc", "envoy-unavailable"] {
        let (a, b) = (
            config_named(&through.result.configs, name),
            config_named(&builtin.result.configs, name),
        );
        println!(
            "{name}: budget refusals through the proxy {}, built-in {}",
            a.budget_refusals, b.budget_refusals
        );
        let slack =
            (tol.relative * a.budget_refusals.max(b.budget_refusals) as f64).max(tol.absolute);
        assert!(
            (a.budget_refusals as f64 - b.budget_refusals as f64).abs() <= slack,
            "{name}: {} vs {}",
            a.budget_refusals,
            b.budget_refusals
        );
    }
    // Something to compare: the grpc preset's throttling refused most retries.
    assert!(config_named(&builtin.result.configs, "grpc").budget_refusals > 50);
}

#[test]
fn nginx_grpc_pass_logs_one_line_per_forwarded_call() {
    let mut server = GrpcServer::start();
    let nginx = Nginx::start_grpc(server.addr);
    let url = format!("url = \"http://{}\"", nginx.addr());
    let run = support::run_live(&support::plan_of(&storm(&url)), false);
    let total: u64 = run.result.configs.iter().map(|c| c.target_forwarded).sum();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let log = rt.block_on(nginx.log_with(total as usize));
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for line in &log {
        let f: Vec<&str> = line.split(' ').collect();
        // Every call nginx answered was a whole gRPC call: HTTP 200, grpc-status 0.
        assert_eq!((f[3], f[5]), ("200", "0"), "{line}");
        *lines.entry(f[0].to_string()).or_default() += 1;
    }
    let calls = server.calls();
    let seen = check_forwarded(&run, |name| lines.get(name).copied().unwrap_or(0));
    for (name, n) in seen {
        assert_eq!(calls[&name].calls, n, "{name}: grpcio behind nginx");
    }
}

/// One gRPC call over a fresh h2c connection: status, headers, body and trailers.
async fn call(
    addr: SocketAddr,
    method: &str,
    extra: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Bytes, Option<HeaderMap>) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut tx, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut b = Request::post(format!("http://{addr}/stormrig.Test/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    let req = b.body(Full::new(stormrig::live::grpc::frame(b""))).unwrap();
    let resp = tx.send_request(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (parts.status, parts.headers, collected.to_bytes(), trailers)
}

/// The call's `grpc-status` (from the trailers, or the headers of a trailers-only answer)
/// and the proxy's mark, if the proxy made the answer.
fn outcome(headers: &HeaderMap, trailers: &Option<HeaderMap>) -> (String, Option<String>) {
    let s = |h: &HeaderMap, k: &str| h.get(k).map(|v| v.to_str().unwrap().to_string());
    let status = s(headers, "grpc-status")
        .or_else(|| trailers.as_ref().and_then(|t| s(t, "grpc-status")))
        .expect("a gRPC answer has a status");
    (status, s(headers, stormrig::headers::UPSTREAM))
}

async fn proxy_to(upstream: SocketAddr) -> stormrig::server::TargetHandle {
    let cfg = TargetConfig {
        model: ServiceModel {
            concurrency: u32::MAX,
            ..ServiceModel::default()
        },
        faults: Vec::new(),
        seed: 1,
        dedup: None,
    };
    let options = ProxyOptions {
        upstream_timeout: Duration::from_millis(500),
        upstream: UpstreamWire {
            protocol: Protocol::H2c,
            tls: None,
        },
        listen: Listen {
            protocol: Protocol::H2c,
            tls: None,
        },
        ..ProxyOptions::default()
    };
    let local = "127.0.0.1:0".parse().unwrap();
    start_proxy_with(local, upstream, cfg, tokio::time::Instant::now(), options)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_servers_answers_are_relayed_and_the_proxys_own_are_marked() {
    let mut server = GrpcServer::start();
    let proxy = proxy_to(server.addr).await;
    let at = proxy.addr();

    // Served: headers, the server's own message, then the status in the trailers.
    let (status, headers, body, trailers) = call(at, "Ok", &[("grpc-timeout", "5S")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&body[..], b"\0\0\0\0\x02ok");
    assert!(!headers.contains_key("grpc-status"));
    assert_eq!(trailers.as_ref().unwrap()["grpc-status"], "0");

    // Failed by the real server itself: its status and pushback, unmarked.
    let (_, headers, body, trailers) = call(at, "Unavailable", &[]).await;
    assert!(body.is_empty());
    assert_eq!(outcome(&headers, &trailers), ("14".into(), None));
    let pushback = headers
        .get("grpc-retry-pushback-ms")
        .or_else(|| trailers.as_ref()?.get("grpc-retry-pushback-ms"));
    assert_eq!(pushback.unwrap(), "300");

    // A server-streaming answer is refused; a slow one times out at the proxy.
    let (_, headers, _, trailers) = call(at, "Stream", &[]).await;
    assert_eq!(
        outcome(&headers, &trailers),
        ("12".into(), Some("protocol-error".into()))
    );
    let (status, headers, _, trailers) = call(at, "Slow", &[]).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "trailers-only, as gRPC fails a call"
    );
    assert_eq!(
        outcome(&headers, &trailers),
        ("4".into(), Some("timeout".into()))
    );

    let stats = proxy.shutdown().await;
    assert_eq!((stats.arrivals, stats.forwarded), (4, 4));
    assert_eq!(
        stats.served_ok, 1,
        "only the call the real server answered OK"
    );
    let calls = server.calls();
    assert_eq!(
        calls[""],
        Calls {
            calls: 4,
            deadlines: 1,
            unavailable: 1
        }
    );

    // No server at all: UNAVAILABLE, marked, never forwarded.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let proxy = proxy_to(closed).await;
    let (status, headers, _, trailers) = call(proxy.addr(), "Ok", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(trailers.is_none(), "trailers-only");
    assert_eq!(
        outcome(&headers, &trailers),
        ("14".into(), Some("connect-failed".into()))
    );
    let stats = proxy.shutdown().await;
    assert_eq!((stats.unreached, stats.forwarded), (1, 0));
}

/// `run --target-url`: the shipped gRPC storm file itself, unchanged, against grpcio. Its
/// faults are applied by the proxy; what the proxy forwarded, grpcio counted, per config.
#[test]
fn the_shipped_grpc_storm_file_runs_unchanged_against_grpcio_with_target_url() {
    use crate::support::process::{bin, tmp_dir};
    let mut server = GrpcServer::start();
    let out = tmp_dir("grpc-target-url").join("out");
    let run = bin()
        .arg("run")
        .arg(support::repo_root().join("scenarios/grpc-unavailable-storm.toml"))
        .arg("--target-url")
        .arg(format!("http://{}", server.addr))
        .arg("--duration")
        .arg("5s")
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    // 1 = a gate of the scenario failed; the run and its counts are whole.
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let calls = server.calls();
    println!("grpcio's calls: {calls:?}");
    let configs = summary["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 4, "every config of the shipped file ran");
    for c in configs {
        let name = c["name"].as_str().unwrap();
        let n = |k: &str| c[k].as_u64().unwrap();
        assert_eq!(n("attempts"), n("downstream_arrivals"), "{name}");
        assert!(n("target_forwarded") > 0, "{name}");
        let served = calls.get(name).map_or(0, |c| c.calls);
        assert_eq!(served, n("target_forwarded"), "{name}: grpcio's count");
        // The UNAVAILABLE window came from the proxy: what reached grpcio succeeded.
        assert_eq!(n("successes"), n("target_forwarded"), "{name}");
        assert!(
            n("failures") > 0,
            "{name}: the proxy's fault answered some calls"
        );
    }
}
