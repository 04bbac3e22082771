//! The attempts the fault proxy answers itself, by reason, in a live run against a `url`
//! target: counted to the request against what the service itself did. Every server here is
//! a raw socket on 127.0.0.1, bounded in time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::http::local;
use crate::support::{plan_of, run_live, two_worker_runtime};

/// What the service did, by what it did.
#[derive(Default)]
struct Did {
    heads: AtomicU64,
    reset: AtomicU64,
    hung: AtomicU64,
    answered: AtomicU64,
}

/// A raw HTTP/1.1 service that takes turns by the request heads it has read: the first of
/// every three it resets (an RST), the second it holds without an answer until the peer
/// leaves, the third it answers `200 ok`. One request per connection.
async fn reset_hang_answer() -> (std::net::SocketAddr, Arc<Did>) {
    let listener = TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let did = Arc::new(Did::default());
    let seen = did.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let did = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                match did.heads.fetch_add(1, Ordering::SeqCst) % 3 {
                    0 => {
                        did.reset.fetch_add(1, Ordering::SeqCst);
                        #[allow(deprecated)]
                        let _ = s.set_linger(Some(Duration::ZERO));
                        drop(s);
                    }
                    1 => {
                        did.hung.fetch_add(1, Ordering::SeqCst);
                        // Held until the proxy gives up on it and closes (bounded: 10 s).
                        let _ = tokio::time::timeout(Duration::from_secs(10), async {
                            while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
                        })
                        .await;
                    }
                    _ => {
                        did.answered.fetch_add(1, Ordering::SeqCst);
                        let _ = s
                            .write_all(
                                b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n",
                            )
                            .await;
                    }
                }
            });
        }
    });
    (addr, did)
}

/// A url target that resets a third of the requests and never answers another third: the
/// proxy answers the hung ones itself (504 after `upstream_timeout`), counted in
/// `proxy_answered.timeout` one for one with what the service held; the resets are relayed,
/// not answered; every attempt reached the service and is counted at both ends.
#[test]
fn proxy_answers_by_reason_equal_what_the_service_did() {
    let rt = two_worker_runtime();
    let (upstream, did) = rt.block_on(reset_hang_answer());
    let text = format!(
        "name = \"proxy-answered\"\nduration = \"1s\"\ndrain = \"2s\"\n[load]\nkind = \"constant\"\nrate = 30.0\n[target]\nurl = \"http://{upstream}\"\nupstream_timeout = \"300ms\"\n[[configs]]\npreset = \"no-retry\"\nper_try_timeout = \"2s\"\n"
    );
    let out = run_live(&plan_of(&text), false);
    let c = &out.result.configs[0];
    let heads = did.heads.load(Ordering::SeqCst);
    let hung = did.hung.load(Ordering::SeqCst);
    let answered = did.answered.load(Ordering::SeqCst);
    assert!(c.attempts >= 20, "{c:?}");
    assert!(hung > 0 && answered > 0 && did.reset.load(Ordering::SeqCst) > 0);
    assert_eq!(heads, c.attempts, "the service read every attempt");
    assert_eq!(c.target_forwarded, heads);
    assert_eq!(c.downstream_arrivals, heads);
    assert_eq!(c.proxy_answered.timeout, hung, "{:?}", c.proxy_answered);
    assert_eq!(
        c.proxy_answered.total(),
        hung,
        "only the hung ones were answered by the proxy: {:?}",
        c.proxy_answered
    );
    assert_eq!(c.target_unreached, 0);
    assert_eq!(c.attempts_by_outcome.get("ok").copied(), Some(answered));
    assert_eq!(c.unfinished, 0);
    // summary.json carries the map by reason.
    let json = serde_json::to_value(c).unwrap();
    assert_eq!(json["proxy_answered"]["timeout"].as_u64(), Some(hung));
    assert_eq!(json["proxy_answered"]["connect_failed"].as_u64(), Some(0));
}

/// Nothing listening: every attempt is answered by the proxy as `connect_failed`, none is an
/// arrival, and the reasons add up to `target_unreached`.
#[test]
fn a_dead_service_is_connect_failed_for_every_attempt() {
    let port = std::net::TcpListener::bind(local())
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        "name = \"dead\"\nduration = \"1s\"\ndrain = \"1s\"\n[load]\nkind = \"constant\"\nrate = 20.0\n[target]\nurl = \"http://127.0.0.1:{port}\"\n[[configs]]\npreset = \"no-retry\"\n"
    );
    let out = run_live(&plan_of(&text), false);
    let c = &out.result.configs[0];
    assert!(c.attempts > 0);
    assert_eq!(
        c.proxy_answered.connect_failed, c.attempts,
        "{:?}",
        c.proxy_answered
    );
    assert_eq!(c.proxy_answered.total(), c.target_unreached);
    assert_eq!(c.downstream_arrivals, 0);
    assert_eq!(c.target_forwarded, 0);
}
