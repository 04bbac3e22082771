//! An answer written back as hyper's server writes it (`Server::encode_headers`, hyper-1.12.0
//! `src/proto/h1/role.rs` lines 662-1002, and the keep-alive fix-ups of
//! `Conn::enforce_version`, `src/proto/h1/conn.rs` lines 672-730): the status line, the
//! headers in their order, the body's framing, the `date`. The head and the first body
//! frame that is ready at once go out in one write from a buffer made for this answer.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

use hyper::body::{Body, Frame};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
use hyper::{Response, StatusCode, Version};
use tokio::net::TcpStream;

use super::head::has_token;
use crate::server::delivery::Delivered;

/// What the request said that shapes its answer.
#[derive(Clone, Copy)]
pub(super) struct Asked {
    pub(super) version: Version,
    pub(super) head_only: bool,
    /// The connection stays open after this answer, as far as the request and its body
    /// go (the answer may still close it).
    pub(super) keep_alive: bool,
}

/// How the body travels.
enum Framed {
    Length,
    Chunked,
    /// Until the connection closes (HTTP/1.0, length unknown).
    Close,
}

/// Writes `resp` on `stream`; `Ok(true)` when the connection is to close after it.
pub(super) async fn write(
    stream: &TcpStream,
    resp: Response<Delivered>,
    asked: Asked,
) -> std::io::Result<bool> {
    let (mut parts, body) = resp.into_parts();
    let mut close = fix_keep_alive(&mut parts.headers, asked);
    // hyper's `BodyLength`: none when the body is already at its end, else exact or not.
    let length = if body.is_end_stream() {
        None
    } else {
        Some(body.size_hint().exact())
    };
    let (out, framed, closes) = encode_head(&parts, length, asked)?;
    close |= closes;
    if !can_have_body(asked.head_only, parts.status) || length.is_none() {
        write_all(stream, &out).await?;
        return Ok(close);
    }
    if matches!(framed, Framed::Close) {
        close = true;
    }
    write_body(stream, out, body, matches!(framed, Framed::Chunked)).await?;
    Ok(close)
}

/// hyper's keep-alive fix-ups (`Conn::enforce_version`, `fix_keep_alive`): an HTTP/1.0
/// request is answered in HTTP/1.0 with `connection: keep-alive` when the connection is
/// kept; an HTTP/1.1 answer on a connection that closes says `connection: close`. Whether
/// the connection closes after the answer, as far as the request goes.
fn fix_keep_alive(headers: &mut hyper::HeaderMap, asked: Asked) -> bool {
    if asked.version == Version::HTTP_10 {
        let says_keep = headers
            .get_all(CONNECTION)
            .iter()
            .any(|v| has_token(v, "keep-alive"));
        if !says_keep && asked.keep_alive {
            headers.append(CONNECTION, HeaderValue::from_static("keep-alive"));
        }
    } else if !asked.keep_alive
        && !headers
            .get_all(CONNECTION)
            .iter()
            .any(|v| has_token(v, "close"))
    {
        headers.append(CONNECTION, HeaderValue::from_static("close"));
    }
    !asked.keep_alive
}

/// The status line and headers, in a buffer made for this answer: how its body travels,
/// and whether the answer itself closes the connection (`connection: close`).
fn encode_head(
    parts: &hyper::http::response::Parts,
    length: Option<Option<u64>>,
    asked: Asked,
) -> std::io::Result<(Vec<u8>, Framed, bool)> {
    let status = parts.status;
    let http10 = asked.version == Version::HTTP_10;
    let may_have_body = can_have_body(asked.head_only, status);
    let mut close = false;
    let mut out = Vec::with_capacity(128 + parts.headers.len() * 32);
    if !http10 && status == StatusCode::OK {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        out.extend_from_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
        out.extend_from_slice(status.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let mut framed: Option<Framed> = None;
    let mut wrote_date = false;
    let mut connection: Option<Vec<u8>> = None;
    for (name, value) in parts.headers.iter() {
        if name == CONTENT_LENGTH {
            if framed.is_some() {
                continue;
            }
            match length {
                Some(Some(_)) => framed = Some(Framed::Length),
                Some(None) => match value
                    .to_str()
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                {
                    Some(_) => framed = Some(Framed::Length),
                    None => return Err(invalid("invalid content-length in an answer")),
                },
                None if asked.head_only => framed = Some(Framed::Length),
                None => continue,
            }
            if !can_have_content_length(status) {
                continue;
            }
        } else if name == TRANSFER_ENCODING {
            // The answers of this server are framed by their length; a relayed
            // transfer-encoding does not travel (the body is whole here).
            continue;
        } else if name == CONNECTION {
            if has_token(value, "close") {
                close = true;
            }
            // Several Connection values go out on one line, as hyper writes them.
            match &mut connection {
                Some(line) => {
                    line.extend_from_slice(b", ");
                    line.extend_from_slice(value.as_bytes());
                }
                None => connection = Some(value.as_bytes().to_vec()),
            }
            continue;
        } else if name == DATE {
            wrote_date = true;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if let Some(line) = connection {
        out.extend_from_slice(b"connection: ");
        out.extend_from_slice(&line);
        out.extend_from_slice(b"\r\n");
    }
    let framed = match framed {
        Some(f) => f,
        None => match length {
            Some(None) if http10 || !may_have_body => Framed::Close,
            Some(None) => {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
                Framed::Chunked
            }
            None | Some(Some(0)) => {
                if can_have_content_length(status) && !asked.head_only {
                    out.extend_from_slice(b"content-length: 0\r\n");
                }
                Framed::Length
            }
            Some(Some(n)) => {
                if can_have_content_length(status) {
                    out.extend_from_slice(b"content-length: ");
                    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                Framed::Length
            }
        },
    };
    if !wrote_date {
        out.extend_from_slice(b"date: ");
        date(&mut out);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok((out, framed, close))
}

/// Writes the body's frames after the head `out`: the head waits for the first frame only
/// when that frame is ready at once (one write), else it goes first and each frame follows
/// as it comes (a sliced or bandwidth-shaped answer).
async fn write_body(
    stream: &TcpStream,
    out: Vec<u8>,
    mut body: Delivered,
    chunked: bool,
) -> std::io::Result<()> {
    let mut pending = Some(out);
    loop {
        let frame = match &pending {
            Some(_) => match poll_once(&mut body) {
                Some(f) => f,
                None => {
                    write_all(stream, &pending.take().unwrap_or_default()).await?;
                    continue;
                }
            },
            None => std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await,
        };
        let mut out = pending.take().unwrap_or_default();
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if data.is_empty() {
                        pending = Some(out);
                        continue;
                    }
                    if chunked {
                        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
                        out.extend_from_slice(&data);
                        out.extend_from_slice(b"\r\n");
                    } else {
                        out.extend_from_slice(&data);
                    }
                }
                // Trailers travel only in a chunked body that announced them; the answers
                // of this server that carry trailers (gRPC's) have an exact length.
                if !out.is_empty() {
                    write_all(stream, &out).await?;
                }
            }
            Some(Err(never)) => match never {},
            None => {
                if chunked {
                    out.extend_from_slice(b"0\r\n\r\n");
                }
                if !out.is_empty() {
                    write_all(stream, &out).await?;
                }
                return Ok(());
            }
        }
    }
}

/// The body's next frame when it is ready without waiting.
fn poll_once(
    body: &mut Delivered,
) -> Option<Option<Result<Frame<bytes::Bytes>, std::convert::Infallible>>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match std::pin::Pin::new(body).poll_frame(&mut cx) {
        std::task::Poll::Ready(f) => Some(f),
        std::task::Poll::Pending => None,
    }
}

/// hyper's `can_chunked` / `can_have_body` (role.rs lines 524-537): no body for HEAD,
/// 1xx, 204 and 304.
fn can_have_body(head_only: bool, status: StatusCode) -> bool {
    !head_only
        && !status.is_informational()
        && !matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED)
}

/// hyper's `can_have_content_length` (role.rs line 539).
fn can_have_content_length(status: StatusCode) -> bool {
    !status.is_informational()
        && !matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED)
}

fn invalid(why: &'static str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why)
}

/// The answer hyper's server gives a head it refuses (`Server::on_error`, role.rs line
/// 493): the status, no body, then the connection closes.
pub(super) fn refusal(status: StatusCode) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes());
    out.extend_from_slice(b"\r\nconnection: close\r\ncontent-length: 0\r\ndate: ");
    date(&mut out);
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// Writes all of `data`, waiting for room as needed.
pub(super) async fn write_all(stream: &TcpStream, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        stream.writable().await?;
        match stream.try_write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

thread_local! {
    /// The date of the current second, formatted once (hyper caches it likewise,
    /// `src/common/date.rs`).
    static TODAY: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// Appends the current IMF-fixdate (`Sat, 05 Dec 2026 08:02:10 GMT`).
fn date(out: &mut Vec<u8>) {
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    TODAY.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            *d = (secs, httpdate::fmt_http_date(now));
        }
        out.extend_from_slice(d.1.as_bytes());
    });
}
