//! A lean HTTP/1.1 client connection over plain TCP: the attempt's own task writes the
//! request and reads the response on the socket itself.
//!
//! hyper's client runs each connection on a task of its own and hands requests and responses
//! across channels: per attempt a channel send, a oneshot, two task wake-ups, the request and
//! the response moved through several futures, and a fresh read buffer whenever the previous
//! response still holds a slice of the old one. Callgrind put that at about two thirds of the
//! generator's instructions per request. Here the attempt needs no other task: one `write`,
//! as many `read`s as the response takes (one, for a small one), httparse for the head.
//!
//! What it accepts and how it fails follows hyper's client, so that a reply is classified the
//! same whichever client read it: a head cut short or a body cut before its length is a
//! reset, a head that does not parse (or is larger than [`MAX_HEAD`], or has more than
//! [`MAX_HEADERS`] headers) is a protocol error, 1xx answers before the final one are
//! skipped (at most [`MAX_INFORMATIONAL`] of them: more is a protocol error, so a server that
//! answers `100 Continue` without end cannot hold the attempt's task reading forever; trailer
//! lines likewise, at most [`MAX_HEAD`] bytes of them), a body is framed by `Transfer-Encoding: chunked`, else `Content-Length`, else the
//! end of the connection. A connection goes back to the pool only when its response was
//! read whole, the server did not say `Connection: close`, and it speaks HTTP/1.1 (or 1.0
//! with keep-alive).

use std::io;
use std::mem::MaybeUninit;

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::CONTENT_LENGTH;
use hyper::Method;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::outgoing::{Outgoing, Value};
use super::reply_headers::{ReplyHeader, ReplyHeaders, Spans};
use crate::policy::TransportError;

/// The largest response head accepted (hyper's default read buffer limit).
pub(super) const MAX_HEAD: usize = 8192 + 4096 * 100;
/// The most headers a response head may carry (hyper's default).
pub(super) const MAX_HEADERS: usize = 100;
pub(super) use crate::headers::MAX_INFORMATIONAL;
/// The longest header name accepted (`HeaderName`'s limit, which hyper applies).
const MAX_NAME: usize = (1 << 16) - 1;
/// Headers of a head whose places are noted on the stack (more go to the heap).
const FEW_HEADERS: usize = 24;
/// What one read asks the kernel for at least.
const READ_CHUNK: usize = 8192;

/// One keep-alive connection.
pub(super) struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet consumed.
    buf: BytesMut,
    /// The request head being written (kept for its allocation).
    out: Vec<u8>,
}

/// How an exchange failed: before any byte of the request was written (the request never
/// left: safe to send again on another connection), or after.
pub(super) enum Failure {
    Unsent(TransportError),
    Sent(TransportError),
}

/// A response read whole.
pub(super) struct Answer {
    pub status: u16,
    pub headers: ReplyHeaders,
    pub body: Bytes,
    /// The connection may carry another request.
    pub reusable: bool,
}

impl Conn {
    pub(super) fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            // Grown at the first read (see `fill`).
            buf: BytesMut::new(),
            out: Vec::with_capacity(256),
        }
    }

    /// True when an idle connection can still carry a request: the server neither closed
    /// it nor sent anything unasked (a non-blocking read finds nothing to read).
    pub(super) fn is_open(&self) -> bool {
        let mut probe = [0u8; 1];
        match self.stream.try_read(&mut probe) {
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            // Closed (0), or bytes nobody asked for: either way not reusable.
            Ok(_) => false,
        }
    }

    /// Writes `req` (origin-form URI) and reads its response, keeping the first `max_body`
    /// bytes of the body.
    pub(super) async fn exchange(
        &mut self,
        req: &Outgoing<'_>,
        max_body: usize,
    ) -> Result<Answer, Failure> {
        self.encode(req);
        if let Err(e) = self.stream.write_all(&self.out).await {
            return Err(Failure::Unsent(io_failure(&e)));
        }
        let head_request = *req.method == Method::HEAD;
        self.read_response(head_request, max_body)
            .await
            .map_err(Failure::Sent)
    }

    fn encode(&mut self, req: &Outgoing<'_>) {
        let out = &mut self.out;
        out.clear();
        out.extend_from_slice(req.method.as_str().as_bytes());
        out.push(b' ');
        match req.uri.path_and_query() {
            Some(pq) => out.extend_from_slice(pq.as_str().as_bytes()),
            None => out.push(b'/'),
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let mut digits = itoa::Buffer::new();
        let mut has_length = false;
        req.each_header(|name, value| {
            has_length |= name == CONTENT_LENGTH;
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            match value {
                Value::Number(n) => out.extend_from_slice(digits.format(n).as_bytes()),
                Value::Text(v) => out.extend_from_slice(v.as_bytes()),
            }
            out.extend_from_slice(b"\r\n");
        });
        if !has_length && (!req.body.is_empty() || has_payload_semantics(req.method)) {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(digits.format(req.body.len()).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(req.body);
    }

    /// Reads into the buffer; `Ok(false)` at the end of the stream.
    ///
    /// The buffer grows only once the socket is readable: a request waiting for its answer
    /// (every request of a hang fault) holds no read buffer, only its connection.
    async fn fill(&mut self) -> Result<bool, TransportError> {
        loop {
            if let Err(e) = self.stream.readable().await {
                return Err(io_failure(&e));
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK / 2 {
                self.buf.reserve(READ_CHUNK);
            }
            match self.stream.try_read_buf(&mut self.buf) {
                Ok(0) => return Ok(false),
                Ok(_) => return Ok(true),
                // A wake-up without data (readiness is a hint): wait again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(io_failure(&e)),
            }
        }
    }

    async fn read_response(
        &mut self,
        head_request: bool,
        max_body: usize,
    ) -> Result<Answer, TransportError> {
        let mut interim = 0;
        loop {
            let Head {
                status,
                keep_alive,
                headers,
                close,
                keep_alive_token,
                chunked,
                length,
            } = loop {
                if let Some(head) = take_head(&mut self.buf)? {
                    break head;
                }
                if self.buf.len() >= MAX_HEAD {
                    return Err(TransportError::Protocol);
                }
                if !self.fill().await? {
                    // The server closed before a whole head: as hyper, a reset.
                    return Err(TransportError::Reset);
                }
            };
            if (100..200).contains(&status) && status != 101 {
                // An interim answer; the final one follows.
                interim += 1;
                if interim > MAX_INFORMATIONAL {
                    return Err(TransportError::Protocol);
                }
                continue;
            }
            let mut reusable = (keep_alive || keep_alive_token) && !close;
            let no_body = head_request || status == 204 || status == 304 || status == 101;
            let framing = if no_body {
                Framing::Length(0)
            } else if chunked {
                Framing::Chunked
            } else {
                match length {
                    Some(Ok(n)) => Framing::Length(n),
                    Some(Err(())) => return Err(TransportError::Protocol),
                    None => Framing::Eof,
                }
            };
            let body = match framing {
                Framing::Length(n) => self.read_length(n, max_body).await?,
                Framing::Chunked => self.read_chunked(max_body).await?,
                Framing::Eof => {
                    reusable = false;
                    self.read_to_eof(max_body).await?
                }
            };
            if status == 101 {
                reusable = false;
            }
            return Ok(Answer {
                status,
                headers,
                body,
                reusable: reusable && self.buf.is_empty(),
            });
        }
    }

    async fn read_length(&mut self, n: u64, max_body: usize) -> Result<Bytes, TransportError> {
        if (self.buf.len() as u64) >= n {
            // The whole body is in the buffer (a small response: one read brought it all).
            let body = self.buf.split_to(n as usize).freeze();
            return Ok(if body.len() > max_body {
                body.slice(..max_body)
            } else {
                body
            });
        }
        let mut kept = Kept::new(max_body);
        let mut left = n;
        loop {
            let take = (self.buf.len() as u64).min(left) as usize;
            kept.push(&self.buf[..take]);
            self.buf.advance(take);
            left -= take as u64;
            if left == 0 {
                return Ok(kept.into_bytes());
            }
            if !self.fill().await? {
                return Err(TransportError::Reset);
            }
        }
    }

    async fn read_to_eof(&mut self, max_body: usize) -> Result<Bytes, TransportError> {
        let mut kept = Kept::new(max_body);
        loop {
            kept.push(&self.buf);
            self.buf.clear();
            if !self.fill().await? {
                return Ok(kept.into_bytes());
            }
        }
    }

    async fn read_chunked(&mut self, max_body: usize) -> Result<Bytes, TransportError> {
        let mut kept = Kept::new(max_body);
        loop {
            // The chunk-size line.
            let size = loop {
                match httparse::parse_chunk_size(&self.buf) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.buf.advance(used);
                        break size;
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.buf.len() > 4096 {
                            return Err(TransportError::Protocol);
                        }
                        if !self.fill().await? {
                            return Err(TransportError::Reset);
                        }
                    }
                    Err(_) => return Err(TransportError::Protocol),
                }
            };
            if size == 0 {
                // Trailers (dropped: only gRPC reads them, and it speaks HTTP/2), then the
                // empty line. Bounded as a head is: lines consumed one by one would
                // otherwise never fill the buffer, and trailer lines could come forever.
                let mut trailers = 0usize;
                loop {
                    match find_crlf(&self.buf) {
                        Some(0) => {
                            self.buf.advance(2);
                            return Ok(kept.into_bytes());
                        }
                        Some(i) => {
                            trailers += i + 2;
                            if trailers > MAX_HEAD {
                                return Err(TransportError::Protocol);
                            }
                            self.buf.advance(i + 2)
                        }
                        None => {
                            if self.buf.len() + trailers > MAX_HEAD {
                                return Err(TransportError::Protocol);
                            }
                            if !self.fill().await? {
                                return Err(TransportError::Reset);
                            }
                        }
                    }
                }
            }
            let mut left = size;
            while left > 0 {
                if self.buf.is_empty() && !self.fill().await? {
                    return Err(TransportError::Reset);
                }
                let take = (self.buf.len() as u64).min(left) as usize;
                kept.push(&self.buf[..take]);
                self.buf.advance(take);
                left -= take as u64;
            }
            // The CRLF after the chunk's data.
            while self.buf.len() < 2 {
                if !self.fill().await? {
                    return Err(TransportError::Reset);
                }
            }
            if &self.buf[..2] != b"\r\n" {
                return Err(TransportError::Protocol);
            }
            self.buf.advance(2);
        }
    }
}

enum Framing {
    Length(u64),
    Chunked,
    Eof,
}

/// The first `max` bytes of a body, the rest counted out and dropped.
struct Kept {
    max: usize,
    bytes: Vec<u8>,
}

impl Kept {
    fn new(max: usize) -> Kept {
        Kept {
            max,
            bytes: Vec::new(),
        }
    }

    fn push(&mut self, data: &[u8]) {
        let room = self.max.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
    }

    fn into_bytes(self) -> Bytes {
        Bytes::from(self.bytes)
    }
}

/// A response head taken off the front of the read buffer, with what its framing headers
/// say (noted while the map is filled, so that no header is looked up again).
struct Head {
    status: u16,
    /// The version keeps the connection open by default (HTTP/1.1).
    keep_alive: bool,
    headers: ReplyHeaders,
    /// `Connection` says `close`, or `keep-alive`.
    close: bool,
    keep_alive_token: bool,
    /// The last `Transfer-Encoding` ends with `chunked`.
    chunked: bool,
    /// `Content-Length`: none, one number (every value the same), or values that disagree
    /// or are not numbers.
    length: Option<Result<u64, ()>>,
}

/// Takes a whole response head off the front of `buf`; `Ok(None)` while it is incomplete.
/// Of its headers, the framing ones are read and those stormrig reads kept
/// ([`ReplyHeaders`]), as slices of the head's bytes (no copy). httparse has checked every
/// name (a token) and value (no control byte but tab) as `HeaderName` and `HeaderValue`
/// would.
fn take_head(buf: &mut BytesMut) -> Result<Option<Head>, TransportError> {
    if buf.is_empty() {
        return Ok(None);
    }
    // Left uninitialised, as hyper leaves them: httparse writes the slots it fills.
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut resp, buf, &mut slots)
    {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(TransportError::Protocol),
    };
    let status = resp.code.ok_or(TransportError::Protocol)?;
    if !(100..=999).contains(&status) {
        return Err(TransportError::Protocol);
    }
    let keep_alive = resp.version == Some(1);
    // Where each name and value lies in the buffer, then the head's bytes frozen: kept
    // values are slices of them (no copy).
    let base = buf.as_ptr() as usize;
    let count = resp.headers.len();
    let mut on_stack = [(0u32, 0u32, 0u32, 0u32); FEW_HEADERS];
    let mut on_heap = Vec::new();
    let spans: &mut [(u32, u32, u32, u32)] = if count <= FEW_HEADERS {
        &mut on_stack[..count]
    } else {
        on_heap.resize(count, (0, 0, 0, 0));
        &mut on_heap
    };
    for (span, h) in spans.iter_mut().zip(resp.headers.iter()) {
        // Offsets into the read buffer, which is refused long before 4 GiB (MAX_HEAD).
        let name = (h.name.as_ptr() as usize - base) as u32;
        let value = (h.value.as_ptr() as usize - base) as u32;
        *span = (
            name,
            name + h.name.len() as u32,
            value,
            value + h.value.len() as u32,
        );
    }
    let head = buf.split_to(len).freeze();
    let mut kept = Spans::default();
    let mut out = Head {
        status,
        keep_alive,
        headers: ReplyHeaders::default(),
        close: false,
        keep_alive_token: false,
        chunked: false,
        length: None,
    };
    for &(ns, ne, vs, ve) in spans.iter() {
        let (ns, ne, vs, ve) = (ns as usize, ne as usize, vs as usize, ve as usize);
        let name = &head[ns..ne];
        let bytes = &head[vs..ve];
        if name.len() > MAX_NAME {
            return Err(TransportError::Protocol);
        }
        match framing_header(name) {
            Some(Framer::ContentLength) => {
                out.length = Some(match (out.length, content_length(bytes)) {
                    (None | Some(Ok(_)), None) | (Some(Err(())), _) => Err(()),
                    (None, Some(n)) => Ok(n),
                    (Some(Ok(m)), Some(n)) => {
                        if m == n {
                            Ok(n)
                        } else {
                            Err(())
                        }
                    }
                });
            }
            Some(Framer::TransferEncoding) => out.chunked = last_token_is(bytes, b"chunked"),
            Some(Framer::Connection) => {
                out.close |= has_token(bytes, b"close");
                out.keep_alive_token |= has_token(bytes, b"keep-alive");
            }
            None => {
                if let Some(h) = ReplyHeader::of(name) {
                    kept.note(h, vs as u32, ve as u32);
                }
            }
        }
    }
    out.headers = ReplyHeaders::new(&head, kept);
    Ok(Some(out))
}

/// A header that frames the body or says whether the connection stays open.
enum Framer {
    ContentLength,
    TransferEncoding,
    Connection,
}

/// Which framing header `name` (any case) is, if one.
fn framing_header(name: &[u8]) -> Option<Framer> {
    let (framer, known): (Framer, &[u8]) = match name.len() {
        14 => (Framer::ContentLength, b"content-length"),
        17 => (Framer::TransferEncoding, b"transfer-encoding"),
        10 => (Framer::Connection, b"connection"),
        _ => return None,
    };
    super::reply_headers::is_name(name, known).then_some(framer)
}

/// The length one `Content-Length` value gives: digits, or a comma-separated list of the
/// same number (as hyper accepts); `None` otherwise.
fn content_length(v: &[u8]) -> Option<u64> {
    let mut n = None;
    for part in v.split(|b| *b == b',') {
        let part = part.trim_ascii();
        if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let m = part
            .iter()
            .fold(0u64, |acc, d| acc * 10 + u64::from(d - b'0'));
        if n.is_some_and(|n| n != m) {
            return None;
        }
        n = Some(m);
    }
    n
}

/// `token` among the comma-separated values of `v`, ignoring case.
fn has_token(v: &[u8], token: &[u8]) -> bool {
    v.split(|b| *b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// `token` is the last of the comma-separated values of `v` (chunked must come last).
fn last_token_is(v: &[u8], token: &[u8]) -> bool {
    v.rsplit(|b| *b == b',')
        .next()
        .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// Methods whose request carries a body by definition: an empty one is sent with
/// `content-length: 0`, as hyper does.
fn has_payload_semantics(m: &Method) -> bool {
    *m == Method::POST || *m == Method::PUT || *m == Method::PATCH
}

/// A socket error as the policy names it (the io part of [`super::classify`]).
fn io_failure(e: &io::Error) -> TransportError {
    if super::is_local_resource(e) {
        return TransportError::LocalResource;
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => TransportError::ConnectRefused,
        io::ErrorKind::TimedOut => TransportError::ReadTimeout,
        _ => TransportError::Reset,
    }
}

#[cfg(test)]
mod tests {
    use super::super::outgoing::Stamp;
    use super::*;
    use hyper::header::HeaderValue;
    use hyper::Uri;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// A server that answers each request read with the next canned bytes, then closes.
    async fn canned(answers: Vec<&'static [u8]>) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            for a in answers {
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                for piece in a.chunks(7) {
                    s.write_all(piece).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
        });
        TcpStream::connect(addr).await.unwrap()
    }

    fn get() -> Outgoing<'static> {
        super::super::outgoing::plain_get("/x")
    }

    async fn ask(c: &mut Conn) -> Result<Answer, TransportError> {
        c.exchange(&get(), 16).await.map_err(|f| match f {
            Failure::Unsent(e) | Failure::Sent(e) => e,
        })
    }

    #[tokio::test(flavor = "current_thread")]
    async fn reads_length_chunked_and_interim_answers_on_one_connection() {
        let mut c = Conn::new(
            canned(vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: b\r\n\r\nok\n",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 No\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n4\r\nbusy\r\n14\r\n01234567890123456789\r\n0\r\nX-T: 1\r\n\r\n",
                b"HTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            ])
            .await,
        );
        let a = ask(&mut c).await.ok().unwrap();
        assert_eq!(
            (a.status, &a.body[..], a.reusable),
            (200, &b"ok\n"[..], true)
        );
        // Headers nothing reads are not kept; those read are.
        assert_eq!(a.headers.iter().count(), 0);
        assert!(c.is_open());
        let b = ask(&mut c).await.ok().unwrap();
        assert_eq!(b.status, 503);
        assert_eq!(b.headers.get(ReplyHeader::RetryAfter), Some("2"));
        // 24 bytes of body, the first 16 kept.
        assert_eq!(&b.body[..], b"busy012345678901");
        assert!(b.reusable);
        let d = ask(&mut c).await.ok().unwrap();
        assert_eq!((d.status, d.body.len(), d.reusable), (204, 0, true));
        let e = ask(&mut c).await.ok().unwrap();
        assert_eq!((e.status, e.reusable), (200, false));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_cut_head_is_a_reset_and_garbage_a_protocol_error() {
        let mut c = Conn::new(canned(vec![b"HTTP/1.1 200 OK\r\nContent-Le"]).await);
        assert!(matches!(ask(&mut c).await, Err(TransportError::Reset)));
        let mut c = Conn::new(canned(vec![b"\x00\x01garbage\r\n\r\n"]).await);
        assert!(matches!(ask(&mut c).await, Err(TransportError::Protocol)));
        let mut c =
            Conn::new(canned(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"]).await);
        assert!(matches!(ask(&mut c).await, Err(TransportError::Reset)));
    }

    /// A server that answers the first request with `head` and then `line` without end.
    async fn endless(head: &'static [u8], line: &'static [u8]) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
            }
            if s.write_all(head).await.is_err() {
                return;
            }
            while s.write_all(line).await.is_ok() {}
        });
        TcpStream::connect(addr).await.unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn endless_interim_answers_and_trailers_are_protocol_errors() {
        let mut c = Conn::new(endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n").await);
        assert!(matches!(ask(&mut c).await, Err(TransportError::Protocol)));
        let mut c = Conn::new(
            endless(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
                b"X-T: 1\r\n",
            )
            .await,
        );
        assert!(matches!(ask(&mut c).await, Err(TransportError::Protocol)));
        // A few interim answers are still skipped.
        let mut c = Conn::new(
            canned(vec![b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"])
                .await,
        );
        assert_eq!(ask(&mut c).await.ok().unwrap().status, 204);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_body_to_the_end_of_the_connection_is_read_whole_and_not_reused() {
        let mut c = Conn::new(canned(vec![b"HTTP/1.0 200 OK\r\n\r\nuntil the end"]).await);
        let a = ask(&mut c).await.ok().unwrap();
        assert_eq!((&a.body[..], a.reusable), (&b"until the end"[..], false));
    }

    #[test]
    fn the_request_head_is_what_hyper_writes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let s = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let mut c = Conn::new(s);
            let host = HeaderValue::from_static("h:1");
            let body = Bytes::new();
            let req = Outgoing {
                method: &Method::POST,
                uri: Uri::from_static("/p?q=1"),
                host: &host,
                stamp: Stamp {
                    request: 7,
                    attempt: 1,
                    ..Stamp::default()
                },
                body: &body,
                ..get()
            };
            c.encode(&req);
            assert_eq!(
                std::str::from_utf8(&c.out).unwrap(),
                "POST /p?q=1 HTTP/1.1\r\nhost: h:1\r\nx-stormrig-request: 7\r\nx-stormrig-attempt: 1\r\ncontent-length: 0\r\n\r\n"
            );
            let abc = Bytes::from_static(b"abc");
            c.encode(&Outgoing {
                body: &abc,
                ..get()
            });
            assert_eq!(
                std::str::from_utf8(&c.out).unwrap(),
                "GET /x HTTP/1.1\r\nhost: 127.0.0.1\r\nx-stormrig-request: 0\r\nx-stormrig-attempt: 0\r\ncontent-length: 3\r\n\r\nabc"
            );
        });
    }
}
