//! The standalone proxy driven as a fault service: a 503 added through the JSON API while
//! traffic flows, listed, removed, and counted exactly; faults scheduled, disabled and
//! enabled; bad fault bodies refused with the field named. Loopback only, bounded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use stormrig::headers;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::http::{fault_proxy as proxy, send, send_body};

/// One control request; its status and JSON answer.
async fn control(
    a: std::net::SocketAddr,
    bearer: &str,
    method: &str,
    path: &str,
    body: &str,
) -> (StatusCode, Value) {
    let auth: &[(&str, &str)] = &[("authorization", bearer)];
    let (st, _, body) = send_body(a, method, path, 0, 1, auth, Bytes::from(body.to_string()))
        .await
        .unwrap();
    let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (st, v)
}

/// One answered request of the load loop.
struct Exchange {
    sent: Instant,
    answered: Instant,
    status: StatusCode,
}

/// Waits (bounded) until the load loop has answered `n` more requests than `from`.
async fn until_answered(done: &AtomicU64, from: u64, n: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    while done.load(Ordering::SeqCst) < from + n {
        assert!(Instant::now() < deadline, "the load loop stalled");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done.load(Ordering::SeqCst)
}

#[tokio::test]
async fn a_fault_added_mid_run_faults_exactly_the_requests_inside_its_span() {
    let (proxy, a, bearer) = proxy().await;

    // Without a --faults file, start says so instead of starting "0 windows"; a JSON fault
    // sent to it is refused, never ignored.
    let (st, v) = control(a, &bearer, "POST", "/_stormrig/faults/start", "").await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert!(v["error"].as_str().unwrap().contains("/_stormrig/faults"));
    let (st, _) = control(
        a,
        &bearer,
        "POST",
        "/_stormrig/faults/start",
        r#"{"kind":"status","status":503}"#,
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Traffic: one request after the other on a keep-alive connection, each with its send
    // and answer instants; bounded in count and time.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let load = {
        let (stop, done) = (stop.clone(), done.clone());
        tokio::spawn(async move {
            let stream = TcpStream::connect(a).await.unwrap();
            let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            tokio::spawn(conn);
            let mut log = Vec::new();
            let limit = Instant::now() + Duration::from_secs(30);
            for id in 1..=50_000u64 {
                if stop.load(Ordering::SeqCst) || Instant::now() > limit {
                    break;
                }
                let req = Request::get("/item")
                    .header("host", "127.0.0.1")
                    .header(headers::REQUEST, id)
                    .header(headers::ATTEMPT, 1)
                    .body(Full::new(Bytes::new()))
                    .unwrap();
                let sent = Instant::now();
                let resp = tx.send_request(req).await.unwrap();
                let status = resp.status();
                resp.into_body().collect().await.unwrap();
                log.push(Exchange {
                    sent,
                    answered: Instant::now(),
                    status,
                });
                done.fetch_add(1, Ordering::SeqCst);
            }
            log
        })
    };

    let n = until_answered(&done, 0, 50).await;
    let adding = Instant::now();
    let (st, added) = control(
        a,
        &bearer,
        "POST",
        "/_stormrig/faults",
        r#"{"kind":"status","status":503,"path":"/item"}"#,
    )
    .await;
    let added_at = Instant::now();
    assert_eq!(st, StatusCode::CREATED, "{added}");
    let id = added["id"].as_u64().unwrap();
    assert_eq!(added["state"], "active");
    assert_eq!(added["kind"], "status");
    assert_eq!(added["status"], 503);
    assert!(added["until_s"].is_null(), "no `for`: until removed");

    let (st, list) = control(a, &bearer, "GET", "/_stormrig/faults", "").await;
    assert_eq!(st, StatusCode::OK);
    let faults = list["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1, "{list}");
    assert_eq!(faults[0]["id"], id);
    assert_eq!(faults[0]["state"], "active");
    let text = proxy.metrics_text();
    assert!(
        text.contains(&format!(
            "stormrig_proxy_fault_active{{id=\"{id}\",kind=\"status\",status=\"503\"}} 1"
        )),
        "{text}"
    );

    let n = until_answered(&done, n, 100).await;
    let removing = Instant::now();
    let (st, removed) = control(a, &bearer, "DELETE", &format!("/_stormrig/faults/{id}"), "").await;
    let removed_at = Instant::now();
    assert_eq!(st, StatusCode::OK, "{removed}");
    let hits = removed["hits"].as_u64().unwrap();
    until_answered(&done, n, 50).await;
    stop.store(true, Ordering::SeqCst);
    let log = load.await.unwrap();

    // Inside the span (sent after the fault was added, answered before its removal began):
    // 503; wholly outside it: the upstream's 200. Only requests straddling an edge may be
    // either.
    // Requests that overlap an edge (the control call's own round trip, during which the
    // load keeps going) may be either: as many as were sent while a control call was on
    // its way, which a slow machine makes more than one.
    let (mut inside, mut edge) = (0, 0);
    for x in &log {
        if x.sent >= added_at && x.answered <= removing {
            assert_eq!(x.status, StatusCode::SERVICE_UNAVAILABLE);
            inside += 1;
        } else if x.answered <= adding || x.sent >= removed_at {
            assert_eq!(x.status, StatusCode::OK);
        } else {
            edge += 1;
        }
    }
    assert!(inside >= 99, "{inside} requests inside the span");
    let faulted = log
        .iter()
        .filter(|x| x.status == StatusCode::SERVICE_UNAVAILABLE)
        .count() as u64;
    assert!(
        faulted - inside <= edge,
        "{faulted} faulted, {inside} inside, {edge} overlapping an edge"
    );
    // The proxy's own counts: exactly the answers the client saw as faulted.
    assert_eq!(hits, faulted);
    let stats = proxy.stats();
    assert_eq!(stats.responses_by_status.get(&503).copied(), Some(faulted));
    assert_eq!(stats.arrivals, log.len() as u64);
    assert_eq!(stats.forwarded, log.len() as u64 - faulted);

    let (_, list) = control(a, &bearer, "GET", "/_stormrig/faults", "").await;
    assert_eq!(list["faults"].as_array().unwrap().len(), 0, "{list}");
    let (st, _) = control(a, &bearer, "DELETE", &format!("/_stormrig/faults/{id}"), "").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    proxy.shutdown().await;
}

#[tokio::test]
async fn faults_are_scheduled_switched_and_checked_like_scenario_faults() {
    let (proxy, a, bearer) = proxy().await;

    // A window an hour from now is scheduled; disabled and enabled again it keeps it.
    let (st, f) = control(
        a,
        &bearer,
        "POST",
        "/_stormrig/faults",
        r#"{"kind":"reset","at":"1h","for":"10s","probability":0.5}"#,
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{f}");
    assert_eq!(f["state"], "scheduled");
    assert_eq!(f["probability"], 0.5);
    let id = f["id"].as_u64().unwrap();
    let (st, f) = control(
        a,
        &bearer,
        "POST",
        &format!("/_stormrig/faults/{id}/disable"),
        "",
    )
    .await;
    assert_eq!(
        (st, f["state"].as_str()),
        (StatusCode::OK, Some("disabled"))
    );
    let (_, f) = control(
        a,
        &bearer,
        "POST",
        &format!("/_stormrig/faults/{id}/enable"),
        "",
    )
    .await;
    assert_eq!(f["state"], "scheduled");

    // A disabled fault does not act: an always-on 500 on /x, disabled, lets /x through.
    let (_, f) = control(
        a,
        &bearer,
        "POST",
        "/_stormrig/faults",
        r#"{"kind":"status","status":500,"path":"/x"}"#,
    )
    .await;
    let id = f["id"].as_u64().unwrap();
    let (st, _, _) = send(a, "GET", "/x", 1, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::INTERNAL_SERVER_ERROR);
    control(
        a,
        &bearer,
        "POST",
        &format!("/_stormrig/faults/{id}/disable"),
        "",
    )
    .await;
    let (st, _, _) = send(a, "GET", "/x", 2, 1, &[]).await.unwrap();
    assert_eq!(st, StatusCode::OK);
    assert!(proxy.metrics_text().contains(&format!(
        "stormrig_proxy_fault_active{{id=\"{id}\",kind=\"status\",status=\"500\"}} 0"
    )));

    // Refused with the field named, and nothing added.
    for (body, names) in [
        (
            r#"{"kind":"status","status":503,"probabilty":0.5}"#,
            "probabilty",
        ),
        (
            r#"{"kind":"status","status":503,"probability":1.5}"#,
            "probability",
        ),
        (r#"{"kind":"status"}"#, "status"),
        (r#"{"kind":"teapot"}"#, "kind"),
        (r#"{"kind":"status","status":503,"for":"0s"}"#, "for"),
        (r#"[1]"#, "object"),
        (r#"kind=status"#, "JSON"),
    ] {
        let (st, v) = control(a, &bearer, "POST", "/_stormrig/faults", body).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{body}: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains(names), "{body}: {e}");
    }
    let (_, list) = control(a, &bearer, "GET", "/_stormrig/faults", "").await;
    assert_eq!(list["faults"].as_array().unwrap().len(), 2, "{list}");

    // Without the token nothing changes.
    let (st, _, _) = send_body(
        a,
        "POST",
        "/_stormrig/faults",
        0,
        1,
        &[],
        Bytes::from_static(br#"{"kind":"hang"}"#),
    )
    .await
    .unwrap();
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (_, list) = control(a, &bearer, "GET", "/_stormrig/faults", "").await;
    assert_eq!(list["faults"].as_array().unwrap().len(), 2);
    proxy.shutdown().await;
}
