//! A request body read straight from the connection's socket by the service that polls it,
//! framed by Content-Length or chunked transfer-encoding (hyper's `Decoder`, hyper-1.12.0
//! `src/proto/h1/decode.rs`), with the `100 Continue` an `Expect: 100-continue` asks for
//! written when the body is first read, as hyper does (`Conn::poll_read_body`,
//! `src/proto/h1/conn.rs` line 411).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use tokio::net::TcpStream;

/// Longest chunk-size line (with its extensions) or trailer line taken.
const MAX_LINE: usize = 4096;
/// Most trailer lines taken after the last chunk (hyper's header limit).
const MAX_TRAILERS: usize = 100;
/// What a read of the body asks room for: a body's bytes are handed on as they come.
const READ_CHUNK: usize = 4096;
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// Where a request's body stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Read to its end (or there was none).
    Done,
    /// This many bytes of a Content-Length body are still to come.
    Length(u64),
    Chunked(Chunk),
}

/// Where a chunked body stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// A chunk-size line is next.
    Size,
    /// This many bytes of the current chunk are still to come.
    Data(u64),
    /// The CRLF after a chunk's data is next.
    DataEnd,
    /// Trailer lines (this many read so far), up to an empty line.
    Trailers(usize),
}

/// A body that breaks its framing or ends before it should.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeanError {
    #[error("request body: the connection ended before its end")]
    Incomplete,
    #[error("request body: invalid chunked framing")]
    Chunked,
    #[error("request body: {0}")]
    Io(#[from] std::io::Error),
}

/// One step of decoding what is buffered.
enum Decoded {
    Data(Bytes),
    End,
    NeedMore,
}

impl Framing {
    pub(crate) fn length(n: u64) -> Framing {
        if n == 0 {
            Framing::Done
        } else {
            Framing::Length(n)
        }
    }

    pub(crate) fn chunked() -> Framing {
        Framing::Chunked(Chunk::Size)
    }

    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Framing::Done)
    }

    /// Takes the next piece of the body out of `buf`.
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, LeanError> {
        loop {
            match self {
                Framing::Done => return Ok(Decoded::End),
                Framing::Length(rest) => {
                    let Some(data) = take_data(buf, rest) else {
                        return Ok(Decoded::NeedMore);
                    };
                    if *rest == 0 {
                        *self = Framing::Done;
                    }
                    return Ok(Decoded::Data(data));
                }
                Framing::Chunked(Chunk::Size) => match httparse::parse_chunk_size(buf) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        buf.advance(used);
                        *self = Framing::Chunked(if size == 0 {
                            Chunk::Trailers(0)
                        } else {
                            Chunk::Data(size)
                        });
                    }
                    Ok(httparse::Status::Partial) if buf.len() <= MAX_LINE => {
                        return Ok(Decoded::NeedMore)
                    }
                    _ => return Err(LeanError::Chunked),
                },
                Framing::Chunked(Chunk::Data(rest)) => {
                    let Some(data) = take_data(buf, rest) else {
                        return Ok(Decoded::NeedMore);
                    };
                    if *rest == 0 {
                        *self = Framing::Chunked(Chunk::DataEnd);
                    }
                    return Ok(Decoded::Data(data));
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if buf.len() < 2 {
                        return Ok(Decoded::NeedMore);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(LeanError::Chunked);
                    }
                    buf.advance(2);
                    *self = Framing::Chunked(Chunk::Size);
                }
                Framing::Chunked(Chunk::Trailers(lines)) => {
                    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
                        if buf.len() > MAX_LINE {
                            return Err(LeanError::Chunked);
                        }
                        return Ok(Decoded::NeedMore);
                    };
                    buf.advance(end + 2);
                    if end == 0 {
                        *self = Framing::Done;
                    } else if *lines >= MAX_TRAILERS {
                        return Err(LeanError::Chunked);
                    } else {
                        *lines += 1;
                    }
                }
            }
        }
    }
}

/// Up to `rest` buffered bytes, split off without a copy; `None` when none is buffered.
fn take_data(buf: &mut BytesMut, rest: &mut u64) -> Option<Bytes> {
    if buf.is_empty() {
        return None;
    }
    let n = usize::try_from(*rest).unwrap_or(usize::MAX).min(buf.len());
    *rest -= n as u64;
    Some(buf.split_to(n).freeze())
}

/// The connection's read side: bytes read and not yet taken, and the current request's
/// body.
pub(crate) struct ReadSide {
    pub(crate) buf: BytesMut,
    pub(crate) framing: Framing,
    /// What is left to write of a `100 Continue` the request asked for.
    pub(crate) continue_due: &'static [u8],
}

impl ReadSide {
    pub(crate) fn new() -> Self {
        ReadSide {
            buf: BytesMut::new(),
            framing: Framing::Done,
            continue_due: &[],
        }
    }

    /// Starts a request's body; `expect_continue` owes the client a `100 Continue`.
    pub(crate) fn start(&mut self, framing: Framing, expect_continue: bool) {
        self.framing = framing;
        self.continue_due = if expect_continue { CONTINUE } else { &[] };
    }

    /// Drops the buffer's room when it holds nothing: an idle or waiting connection keeps
    /// no read buffer.
    pub(crate) fn shrink(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    /// Takes what is already buffered of the body without reading (hyper's
    /// `poll_drain_or_close_read`): whether the body is now read to its end.
    pub(crate) fn drain_buffered(&mut self) -> bool {
        self.continue_due = &[];
        loop {
            match self.framing.decode(&mut self.buf) {
                Ok(Decoded::Data(_)) => continue,
                Ok(Decoded::End) => return true,
                Ok(Decoded::NeedMore) | Err(_) => return false,
            }
        }
    }
}

/// A connection's socket and its read side, shared with the body of the request in flight
/// (which reads the socket while the service polls it).
pub(crate) struct Io {
    pub(super) stream: TcpStream,
    read: Mutex<ReadSide>,
}

impl Io {
    pub(super) fn new(stream: TcpStream) -> Self {
        Io {
            stream,
            read: Mutex::new(ReadSide::new()),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, ReadSide> {
        self.read.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A request body read from the connection. `None`: the request has no body.
pub(crate) struct LeanBody(Option<Arc<Io>>);

impl LeanBody {
    pub(crate) fn new(io: Option<Arc<Io>>) -> Self {
        LeanBody(io)
    }
}

impl Body for LeanBody {
    type Data = Bytes;
    type Error = LeanError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, LeanError>>> {
        let Some(io) = &self.0 else {
            return Poll::Ready(None);
        };
        let mut guard = io.lock();
        let side = &mut *guard;
        loop {
            match side.framing.decode(&mut side.buf) {
                Ok(Decoded::Data(d)) => return Poll::Ready(Some(Ok(Frame::data(d)))),
                Ok(Decoded::End) => return Poll::Ready(None),
                Ok(Decoded::NeedMore) => {}
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
            while !side.continue_due.is_empty() {
                ready!(io.stream.poll_write_ready(cx))?;
                match io.stream.try_write(side.continue_due) {
                    Ok(n) => side.continue_due = &side.continue_due[n..],
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Poll::Ready(Some(Err(e.into()))),
                }
            }
            ready!(io.stream.poll_read_ready(cx))?;
            if side.buf.capacity() - side.buf.len() < READ_CHUNK / 2 {
                side.buf.reserve(READ_CHUNK);
            }
            match io.stream.try_read_buf(&mut side.buf) {
                Ok(0) => return Poll::Ready(Some(Err(LeanError::Incomplete))),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Some(Err(e.into()))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.as_ref().is_none_or(|io| io.lock().framing.is_done())
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            None => SizeHint::with_exact(0),
            Some(io) => match io.lock().framing {
                Framing::Done => SizeHint::with_exact(0),
                Framing::Length(n) => SizeHint::with_exact(n),
                Framing::Chunked(_) => SizeHint::default(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `raw` fed in pieces of `step` bytes: the body's bytes and what is left.
    fn decode_in_steps(mut framing: Framing, raw: &[u8], step: usize) -> (Vec<u8>, BytesMut) {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut fed = 0;
        loop {
            match framing.decode(&mut buf).unwrap() {
                Decoded::Data(d) => out.extend_from_slice(&d),
                Decoded::End => return (out, buf),
                Decoded::NeedMore => {
                    assert!(fed < raw.len(), "ran out of input");
                    let n = step.min(raw.len() - fed);
                    buf.extend_from_slice(&raw[fed..fed + n]);
                    fed += n;
                }
            }
        }
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_reads() {
        let raw = b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\nGET /next";
        for step in [1, 2, 3, 7, raw.len()] {
            let (body, rest) = decode_in_steps(Framing::chunked(), raw, step);
            assert_eq!(body, b"hello world", "step {step}");
            assert!(b"GET /next".starts_with(&rest), "step {step}: {rest:?}");
        }
    }

    #[test]
    fn length_bodies_stop_at_their_length() {
        let (body, rest) = decode_in_steps(Framing::length(3), b"abcGET", 6);
        assert_eq!(body, b"abc");
        assert_eq!(&rest[..], b"GET");
    }

    #[test]
    fn broken_chunked_framing_is_an_error() {
        let mut buf = BytesMut::from(&b"3\r\nabcXY"[..]);
        let mut f = Framing::chunked();
        assert!(matches!(f.decode(&mut buf), Ok(Decoded::Data(_))));
        assert!(matches!(f.decode(&mut buf), Err(LeanError::Chunked)));
        let mut buf = BytesMut::from(&b"zz\r\n"[..]);
        assert!(Framing::chunked().decode(&mut buf).is_err());
    }
}
