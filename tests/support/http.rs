//! Loopback HTTP helpers of the proxy tests: one request on a fresh connection, and an
//! upstream that echoes stormrig's headers.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use stormrig::headers;
use stormrig::server::proxy::{serve_standalone, StandaloneProxy};
use tokio::net::{TcpListener, TcpStream};

/// Port 0 on 127.0.0.1: a free loopback port.
pub fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// One request on a fresh connection; `Err` when the connection ends without an answer.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    request: u64,
    attempt: u32,
    extra: &[(&str, &str)],
) -> Result<(StatusCode, hyper::HeaderMap, Bytes), String> {
    send_body(addr, method, path, request, attempt, extra, Bytes::new()).await
}

/// [`send`] with a request body.
pub async fn send_body(
    addr: SocketAddr,
    method: &str,
    path: &str,
    request: u64,
    attempt: u32,
    extra: &[(&str, &str)],
    body: Bytes,
) -> Result<(StatusCode, hyper::HeaderMap, Bytes), String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header(headers::REQUEST, request)
        .header(headers::ATTEMPT, attempt);
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    let resp = tx
        .send_request(b.body(Full::new(body)).unwrap())
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

/// A standalone proxy with no faults in front of an [`echo_server`]: it, its address and
/// the `Authorization` value of its control requests.
pub async fn fault_proxy() -> (StandaloneProxy, SocketAddr, String) {
    let upstream = echo_server().await;
    let proxy = serve_standalone(local(), upstream, Vec::new(), 1)
        .await
        .unwrap();
    let a = proxy.addr();
    let bearer = format!("Bearer {}", proxy.control_token());
    (proxy, a, bearer)
}

/// An upstream answering 200 with stormrig's headers echoed in the body.
pub async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind(local()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let svc = service_fn(|req: Request<hyper::body::Incoming>| async move {
                    let h = |n: &str| {
                        req.headers()
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-")
                            .to_string()
                    };
                    let body = format!(
                        "{} {} {} {}",
                        h(headers::REQUEST),
                        h(headers::ATTEMPT),
                        h(headers::IDEMPOTENCY_KEY),
                        req.uri().path()
                    );
                    let status = if req.uri().path().starts_with("/fail") {
                        503
                    } else {
                        200
                    };
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    *r.status_mut() = StatusCode::from_u16(status).unwrap();
                    r.headers_mut()
                        .insert("x-upstream", hyper::header::HeaderValue::from_static("yes"));
                    Ok::<_, Infallible>(r)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}
