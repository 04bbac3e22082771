//! A budget of HTTP/2 frames that carry no answer, per upstream connection of the proxy.
//!
//! hyper's HTTP/2 client gives the proxy no say over what the upstream sends besides
//! answers: h2 0.4.20 queues each interim (1xx) HEADERS frame and skips it while polling
//! for the response (`src/proto/streams/recv.rs` lines 275-289 and 350-357; hyper's
//! `on_informational` is HTTP/1.1's only), answers each PING and SETTINGS before it reads
//! the next frame (`src/proto/ping_pong.rs` line 97, `src/proto/settings.rs` lines 84-88),
//! so an upstream that sends them without end keeps the proxy decoding until the upstream
//! timeout. Only an endless CONTINUATION has a bound of h2's own: a header block of more
//! than `max(5, 1.25 × max_header_list_size / max_frame_size)` frames is a GOAWAY
//! ENHANCE_YOUR_CALM (`src/codec/framed_read.rs` lines 106-113 and 327-343).
//!
//! The budget reads the frame headers (9 bytes, RFC 9113 §4.1) passing through the
//! connection, after TLS, both ways: every frame the upstream sends other than DATA (and
//! every empty DATA frame) spends one, and every request the proxy sends (a HEADERS frame it writes) adds
//! [`PER_REQUEST`] to a start of [`BASE`]. An answer needs a few (its headers, trailers,
//! window updates of a large body); a flood spends the budget in microseconds, and then
//! the connection fails with [`Flooded`]: every request on it is answered by the proxy as a
//! protocol error (502, `x-stormrig-upstream: protocol-error`), counted, and the
//! connection closed. DATA with bytes is bounded elsewhere (flow control,
//! [`super::relay::MAX_BODY`]).

use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};

/// Frames other than DATA an upstream connection may send before its first request.
pub(crate) const BASE: u64 = 256;
/// Frames other than DATA allowed per request sent on the connection.
pub(crate) const PER_REQUEST: u64 = 128;

/// The client connection preface (RFC 9113 §3.4), which precedes the proxy's frames.
const PREFACE_LEN: usize = 24;
const DATA: u8 = 0;
const HEADERS: u8 = 1;

/// The error an upstream connection fails with once its budget is spent.
#[derive(Debug)]
pub(crate) struct Flooded {
    pub frames: u64,
    pub requests: u64,
}

impl std::fmt::Display for Flooded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the upstream sent {} HTTP/2 frames that carry no answer for {} requests",
            self.frames, self.requests
        )
    }
}

impl std::error::Error for Flooded {}

/// Where a reader of frame headers is in a byte stream.
#[derive(Debug, Default)]
struct Frames {
    /// Bytes still to skip before the next frame header (a preface, a payload).
    skip: usize,
    head: [u8; 9],
    have: usize,
}

impl Frames {
    /// Reads `bytes`, calling `seen(type, payload length)` for each whole frame header.
    fn read(&mut self, mut bytes: &[u8], mut seen: impl FnMut(u8, usize)) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == 9 {
                self.have = 0;
                let h = &self.head;
                self.skip = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                seen(h[3], self.skip);
            }
        }
    }
}

/// An upstream connection under a frame budget (see the module docs). Over HTTP/1.1 it
/// only passes bytes through.
pub(crate) struct Budgeted<T> {
    inner: T,
    counting: bool,
    read: Frames,
    written: Frames,
    spent: u64,
    requests: u64,
    /// Where reads are staged to be looked at before they are handed on.
    scratch: Box<[u8]>,
}

impl<T> Budgeted<T> {
    pub(crate) fn new(inner: T, h2: bool) -> Self {
        Budgeted {
            inner,
            counting: h2,
            read: Frames::default(),
            written: Frames {
                skip: PREFACE_LEN,
                ..Frames::default()
            },
            spent: 0,
            requests: 0,
            scratch: vec![0u8; if h2 { 16 * 1024 } else { 0 }].into_boxed_slice(),
        }
    }

    fn allowed(&self) -> u64 {
        BASE + PER_REQUEST * self.requests
    }

    fn flooded(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            Flooded {
                frames: self.spent,
                requests: self.requests,
            },
        )
    }
}

impl<T: Read + Unpin> Read for Budgeted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        if !me.counting {
            return Pin::new(&mut me.inner).poll_read(cx, buf);
        }
        if me.spent > me.allowed() {
            return Poll::Ready(Err(me.flooded()));
        }
        let room = buf.remaining().min(me.scratch.len());
        let mut staged = ReadBuf::new(&mut me.scratch[..room]);
        std::task::ready!(Pin::new(&mut me.inner).poll_read(cx, staged.unfilled()))?;
        let got = staged.filled();
        let mut spent = 0;
        // An empty DATA frame carries nothing either, and flow control does not slow it.
        me.read.read(got, |kind, len| {
            spent += u64::from(kind != DATA || len == 0)
        });
        buf.put_slice(got);
        me.spent += spent;
        // The bytes read are handed on; the next read fails once the budget is spent, so
        // h2 sees the frames it was sent and then the end.
        Poll::Ready(Ok(()))
    }
}

impl<T: Write + Unpin> Write for Budgeted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        let n = std::task::ready!(Pin::new(&mut me.inner).poll_write(cx, buf))?;
        if me.counting {
            let mut requests = 0;
            me.written
                .read(&buf[..n], |kind, _| requests += u64::from(kind == HEADERS));
            me.requests += requests;
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for Budgeted<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

/// A connector whose connections are [`Budgeted`] (counting when `h2`).
#[derive(Clone)]
pub(crate) struct BudgetedConnector<C> {
    pub(crate) inner: C,
    pub(crate) h2: bool,
}

impl<C> tower_service::Service<Uri> for BudgetedConnector<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = Budgeted<C::Response>;
    type Error = C::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let h2 = self.h2;
        Box::pin(async move { Ok(Budgeted::new(connecting.await?, h2)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, len: usize) -> Vec<u8> {
        let mut f = (len as u32).to_be_bytes()[1..].to_vec();
        f.extend([kind, 0, 0, 0, 0, 1]);
        f.extend(vec![0u8; len]);
        f
    }

    #[test]
    fn frame_headers_are_found_across_any_split() {
        let mut bytes = frame(HEADERS, 5);
        bytes.extend(frame(DATA, 100));
        bytes.extend(frame(6, 8));
        for split in 1..bytes.len() {
            let mut f = Frames::default();
            let mut kinds = Vec::new();
            f.read(&bytes[..split], |k, n| kinds.push((k, n)));
            f.read(&bytes[split..], |k, n| kinds.push((k, n)));
            assert_eq!(
                kinds,
                [(HEADERS, 5), (DATA, 100), (6, 8)],
                "split at {split}"
            );
        }
    }

    #[test]
    fn the_preface_is_skipped_on_the_way_out() {
        let mut f = Frames {
            skip: PREFACE_LEN,
            ..Frames::default()
        };
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(4, 0));
        bytes.extend(frame(HEADERS, 3));
        let mut kinds = Vec::new();
        f.read(&bytes, |k, _| kinds.push(k));
        assert_eq!(kinds, [4, HEADERS]);
    }
}
