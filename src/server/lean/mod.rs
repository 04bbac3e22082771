//! A lean HTTP/1.1 server connection for the built-in target and its proxy modes over
//! clear TCP: what `bench memory` measures, a connection per request in flight.
//!
//! hyper's HTTP/1.1 server keeps three 8 KiB buffers per connection for as long as a
//! request waits for its answer (its first read buffer, whose bytes the request's header
//! values still share; a second one reserved to watch for the client's EOF; its write
//! buffer), and no setting sizes them: about 24 KB per hanging request of a hang fault.
//! Here the read buffer exists only while there are bytes to take (grown once the socket is
//! readable, dropped once empty: the head is copied out, exactly its size), the EOF watch
//! reads into the stack, and each answer is written from a buffer made for it.
//!
//! It answers as hyper's server does wherever a client could tell (the modules cite the
//! hyper-1.12.0 lines they follow): keep-alive and `Connection: close` both ways (HTTP/1.0
//! without keep-alive closes), bodies by Content-Length or chunked, `100 Continue` when an
//! `Expect: 100-continue` body is first read, pipelined requests answered in order, a head
//! refused with 431 / 400 / 414 and then closed, answers framed by their exact length,
//! `date` on every answer, no body for HEAD, 204 and 304. A client that closes its
//! connection while its request is in flight takes the request out of flight (the service
//! future is dropped, as hyper's `mid_message_detect_eof` does, `conn.rs` line 493); a
//! service error ([`super::CloseConnection`]: the reset fault) closes the connection
//! without an answer, and a graceful close waits out a slow-close hold first.
//!
//! HTTP/2 (h2c and TLS) and HTTP/1.1 over TLS stay with hyper.

mod answer;
pub(super) mod body;
mod head;

use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;

use bytes::BufMut;
use hyper::Method;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::body::ReqBody;
use super::delivery::CloseHold;
use super::request::serve_request;
use super::Shared;
use body::{Io, LeanBody};
use head::{Refused, MAX_HEAD};

/// What a read of a request head asks room for.
const READ_CHUNK: usize = 4096;
/// What the watch for a client's EOF reads at once (into the stack), while a request waits.
const PEEK: usize = 512;

/// How reading a head ended without one.
enum NoHead {
    /// The client closed between requests: a graceful close.
    Closed,
    /// Refused: answered (or not), then closed at once.
    Refused(Refused),
    /// The connection failed, or ended inside a head: closed without an answer.
    Broken,
}

/// Serves one accepted connection until it closes.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>, hold: CloseHold) {
    let io = Arc::new(Io::new(stream));
    loop {
        let head = match read_head(&io).await {
            Ok(head) => head,
            Err(NoHead::Closed) => break,
            Err(NoHead::Refused(Refused::Answer(status))) => {
                let _ = answer::write_all(&io.stream, &answer::refusal(status)).await;
                return;
            }
            Err(NoHead::Refused(Refused::Close) | NoHead::Broken) => return,
        };
        let has_body = !head.framing.is_done();
        io.lock().start(head.framing, head.expect_continue);
        let mut asked = answer::Asked {
            version: head.request.version(),
            head_only: head.request.method() == Method::HEAD,
            keep_alive: head.keep_alive,
        };
        let body = LeanBody::new(has_body.then(|| io.clone()));
        let req = head.request.map(|()| ReqBody::Lean(body));
        let served = serve_request(shared.clone(), req, hold.clone(), false);
        let resp = tokio::select! {
            biased;
            resp = served => resp,
            () = client_gone(&io) => return,
        };
        // A service error closes the connection without an answer (the reset fault).
        let Ok(resp) = resp else { return };
        {
            let mut side = io.lock();
            if !side.drain_buffered() {
                // The body was not read to its end: hyper closes after the answer.
                asked.keep_alive = false;
            }
            side.shrink();
        }
        let close = match answer::write(&io.stream, resp, asked).await {
            Ok(close) => close,
            Err(_) => return,
        };
        if close {
            break;
        }
    }
    close_gracefully(io, &hold).await;
}

/// Reads until a whole head is buffered, and takes it out of the buffer.
async fn read_head(io: &Io) -> Result<head::Head, NoHead> {
    loop {
        {
            let mut side = io.lock();
            if !side.buf.is_empty() {
                match head::take(&mut side.buf) {
                    Ok(Some(h)) => {
                        side.shrink();
                        return Ok(h);
                    }
                    Ok(None) if side.buf.len() >= MAX_HEAD => {
                        return Err(NoHead::Refused(Refused::Answer(
                            hyper::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                        )))
                    }
                    Ok(None) => {}
                    Err(refused) => return Err(NoHead::Refused(refused)),
                }
            }
        }
        if io.stream.readable().await.is_err() {
            return Err(NoHead::Broken);
        }
        let mut side = io.lock();
        if side.buf.capacity() - side.buf.len() < READ_CHUNK / 2 {
            // Never past the head limit: what a refused head leaves unread stays in the
            // socket, as with hyper.
            let room = READ_CHUNK.min(MAX_HEAD - side.buf.len().min(MAX_HEAD));
            side.buf.reserve(room.max(1));
        }
        let limit = MAX_HEAD.saturating_sub(side.buf.len()).max(1);
        let spare = side.buf.capacity() - side.buf.len();
        let mut take = (&mut side.buf).limit(limit.min(spare));
        match io.stream.try_read_buf(&mut take) {
            Ok(0) if side.buf.is_empty() => return Err(NoHead::Closed),
            Ok(0) => return Err(NoHead::Broken),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return Err(NoHead::Broken),
        }
    }
}

/// Completes when the client closes its connection (or it fails) while its request waits
/// for its answer. Watched only once the request's body is read and while nothing of a
/// next request is buffered, as hyper does (`mid_message_detect_eof`, `conn.rs` line 493);
/// the bytes of a pipelined request read meanwhile are kept for it.
async fn client_gone(io: &Io) {
    poll_fn(|cx| {
        let mut side = io.lock();
        if !side.framing.is_done() || !side.buf.is_empty() {
            return Poll::Pending;
        }
        loop {
            if io.stream.poll_read_ready(cx).is_ready() {
                let mut peek = [0u8; PEEK];
                match io.stream.try_read(&mut peek) {
                    Ok(0) => return Poll::Ready(()),
                    Ok(n) => {
                        side.buf.extend_from_slice(&peek[..n]);
                        return Poll::Pending;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => return Poll::Ready(()),
                }
            }
            return Poll::Pending;
        }
    })
    .await
}

/// Closes after the last answer: the slow-close hold first, then a FIN (hyper's
/// `poll_shutdown`, through [`super::delivery::HeldClose`] on its path).
async fn close_gracefully(io: Arc<Io>, hold: &CloseHold) {
    let delay = hold.delay();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Ok(io) = Arc::try_unwrap(io) {
        let mut stream = io.stream;
        let _ = stream.shutdown().await;
    }
}
