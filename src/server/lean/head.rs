//! A request head read off the wire: parsed with httparse and checked as hyper's server
//! checks it (`Server::parse` in hyper-1.12.0 `src/proto/h1/role.rs` lines 146-399), with
//! the answer hyper gives a head it refuses (`Server::on_error`, same file line 493).

use bytes::{Buf, Bytes, BytesMut};
use hyper::header::{
    HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, EXPECT, TRANSFER_ENCODING,
};
use hyper::{HeaderMap, Method, Request, StatusCode, Uri, Version};

use super::body::Framing;

/// Longest head hyper's server buffers before it answers 431: its default read buffer
/// limit (`DEFAULT_MAX_BUFFER_SIZE`, hyper-1.12.0 `src/proto/h1/io.rs` line 23).
pub(super) const MAX_HEAD: usize = 8192 + 4096 * 100;
/// Most headers a request may carry; one more is answered 431 (`DEFAULT_MAX_HEADERS`,
/// `role.rs` line 31, and httparse's `TooManyHeaders` mapped to `Parse::TooLarge` in
/// hyper's `src/error.rs` line 661).
const MAX_HEADERS: usize = 100;
/// Longest request target hyper takes; a longer one is answered 414 (`role.rs` line 34).
const MAX_URI_LEN: usize = (u16::MAX - 1) as usize;
/// What an HTTP/2 client with prior knowledge sends first: hyper's HTTP/1.1 server closes
/// without an answer when it sees it (`Conn::on_parse_error`, `conn.rs` line 838).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// A request head, and what it says about its body and its connection.
pub(super) struct Head {
    pub(super) request: Request<()>,
    pub(super) framing: Framing,
    /// The client wants the connection kept after this answer.
    pub(super) keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body.
    pub(super) expect_continue: bool,
}

/// A head the server does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Answered with this status, then the connection is closed.
    Answer(StatusCode),
    /// Closed without an answer.
    Close,
}

/// The request head at the start of `buf`, taken out of it; `Ok(None)` while it is
/// incomplete (the caller answers 431 once `buf` holds [`MAX_HEAD`] bytes).
pub(super) fn take(buf: &mut BytesMut) -> Result<Option<Head>, Refused> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) if buf.starts_with(H2_PREFACE) => return Err(Refused::Close),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Refused::Answer(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE))
        }
        Err(_) => return Err(Refused::Answer(StatusCode::BAD_REQUEST)),
    };
    let bad = Refused::Answer(StatusCode::BAD_REQUEST);
    let path = req.path.unwrap_or("/");
    if path.len() > MAX_URI_LEN {
        return Err(Refused::Answer(StatusCode::URI_TOO_LONG));
    }
    let method = Method::from_bytes(req.method.unwrap_or("").as_bytes()).map_err(|_| bad)?;
    let http11 = req.version == Some(1);
    // One copy of the head, exactly its size: the header values are slices of it, so the
    // read buffer is free to go while the request waits for its answer.
    let head = Bytes::copy_from_slice(&buf[..len]);
    let base = buf.as_ptr() as usize;
    // The same bytes in the copy: httparse's slices point into `buf`.
    let copied = |part: &[u8]| {
        let at = part.as_ptr() as usize - base;
        head.slice(at..at + part.len())
    };
    let uri = Uri::from_maybe_shared(copied(path.as_bytes())).map_err(|_| bad)?;

    let mut keep_alive = http11;
    let mut saw_close = false;
    let mut expect_continue = false;
    let mut length: Option<u64> = None;
    let mut is_te = false;
    let mut is_cl = false;
    let mut chunked = false;
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| bad)?;
        let value = HeaderValue::from_maybe_shared(copied(h.value)).map_err(|_| bad)?;
        if name == TRANSFER_ENCODING {
            if !http11 {
                return Err(bad);
            }
            is_te = true;
            if length.take().is_some() {
                headers.remove(CONTENT_LENGTH);
            }
            chunked = is_chunked(&value);
        } else if name == CONTENT_LENGTH {
            is_cl = true;
            if is_te {
                continue;
            }
            let len = content_length(&value).ok_or(bad)?;
            match length {
                Some(prev) if prev != len => return Err(bad),
                Some(_) => continue,
                None => length = Some(len),
            }
        } else if name == CONNECTION {
            // One `close` among several Connection lines wins over a later `keep-alive`.
            if saw_close || has_token(&value, "close") {
                saw_close = true;
                keep_alive = false;
            } else if !http11 {
                keep_alive = has_token(&value, "keep-alive");
            }
        } else if name == EXPECT {
            expect_continue = value.as_bytes().eq_ignore_ascii_case(b"100-continue");
        }
        headers.append(name, value);
    }
    if is_te && !chunked {
        return Err(bad);
    }
    if is_te && is_cl {
        keep_alive = false;
    }
    let framing = if chunked {
        Framing::chunked()
    } else {
        Framing::length(length.unwrap_or(0))
    };
    buf.advance(len);
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = if http11 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };
    *request.headers_mut() = headers;
    Ok(Some(Head {
        request,
        expect_continue: expect_continue && http11 && !framing.is_done(),
        framing,
        keep_alive,
    }))
}

/// A Content-Length value: digits, or a list of equal digit runs (as hyper's
/// `content_length_parse`, hyper-1.12.0 `src/headers.rs`).
fn content_length(value: &HeaderValue) -> Option<u64> {
    let s = value.to_str().ok()?;
    let mut found: Option<u64> = None;
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u64 = part.parse().ok()?;
        match found {
            Some(prev) if prev != n => return None,
            _ => found = Some(n),
        }
    }
    found
}

/// The last transfer coding is `chunked` (hyper's `is_chunked_`, `src/headers.rs`).
fn is_chunked(value: &HeaderValue) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|s| s.rsplit(',').next())
        .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
}

/// `value` lists `token` (case-insensitive), as a Connection header does.
pub(super) fn has_token(value: &HeaderValue, token: &str) -> bool {
    value
        .to_str()
        .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Result<Option<Head>, Refused> {
        take(&mut BytesMut::from(raw))
    }

    #[test]
    fn framing_and_keep_alive_follow_the_head() {
        let h = parse(b"POST /a HTTP/1.1\r\ncontent-length: 3\r\n\r\nabc")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive && !h.framing.is_done());
        let h = parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive && h.framing.is_done());
        let h = parse(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive);
        let h = parse(b"GET / HTTP/1.1\r\nconnection: close\r\nconnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive);
        assert!(parse(b"GET / HTTP/1.1\r\nhost: x\r\n").unwrap().is_none());
    }

    #[test]
    fn refusals_are_hyper_s() {
        let bad = Some(Refused::Answer(StatusCode::BAD_REQUEST));
        assert_eq!(
            parse(b"POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n").err(),
            bad
        );
        assert_eq!(
            parse(b"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n").err(),
            bad
        );
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("x-h{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(
            parse(&many).err(),
            Some(Refused::Answer(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE))
        );
        assert_eq!(
            parse(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").err(),
            Some(Refused::Close)
        );
    }
}
