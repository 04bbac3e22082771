//! Connection-level faults on the response path: a served answer delivered at a bandwidth,
//! in slices with pauses between them, or followed by a connection held open before it
//! closes (Toxiproxy's `bandwidth`, `slicer` and `slow_close`, where they fit HTTP).
//!
//! The answer's body is already in memory (the built-in target's few bytes, or the
//! proxy's relayed body, bounded by [`super::proxy::MAX_BODY`]): shaping slices that buffer
//! without copying it, so memory stays what the answer was.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::Response;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::Resp;
use crate::scenario::Delivery;

/// Largest slice a bandwidth fault writes at once: a fast rate is met with 64 KiB writes.
const MAX_BANDWIDTH_SLICE: u64 = 64 * 1024;
/// A bandwidth fault writes about ten slices a second.
const BANDWIDTH_SLICES_PER_S: u64 = 10;

/// What the server writes back: the answer as built, or sliced by a connection-level fault.
pub(crate) enum Delivered {
    Whole(Full<Bytes>),
    /// Data, then trailers (a gRPC answer, whose status travels in the trailers).
    Trailed {
        data: Option<Bytes>,
        trailers: Option<hyper::HeaderMap>,
    },
    Sliced(Sliced),
}

/// A body written `slice` bytes at a time, with a pause of `gap` between two slices (and
/// before the first when `lead`).
pub(crate) struct Sliced {
    rest: Bytes,
    slice: usize,
    gap: Duration,
    lead: bool,
    started: bool,
    pause: Option<Pin<Box<Sleep>>>,
}

impl Body for Delivered {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            Delivered::Whole(full) => Pin::new(full).poll_frame(cx),
            Delivered::Trailed { data, trailers } => Poll::Ready(match data.take() {
                Some(d) => Some(Ok(Frame::data(d))),
                None => trailers.take().map(|t| Ok(Frame::trailers(t))),
            }),
            Delivered::Sliced(s) => s.poll_slice(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Delivered::Whole(full) => full.is_end_stream(),
            Delivered::Trailed { data, trailers } => data.is_none() && trailers.is_none(),
            Delivered::Sliced(s) => s.rest.is_empty(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Delivered::Whole(full) => full.size_hint(),
            Delivered::Trailed { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Delivered::Sliced(s) => SizeHint::with_exact(s.rest.len() as u64),
        }
    }
}

impl Sliced {
    fn poll_slice(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        if (self.started || self.lead) && !self.gap.is_zero() {
            let gap = self.gap;
            let pause = self
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(gap)));
            ready!(pause.as_mut().poll(cx));
            self.pause = None;
        }
        self.started = true;
        let n = self.slice.min(self.rest.len());
        Poll::Ready(Some(self.rest.split_to(n)))
    }
}

/// How a bandwidth of `bytes_per_s` is written: slices of about a tenth of a second's
/// bytes, each after a pause of its own length at that rate (rounded up), so a body of N
/// bytes takes at least N / rate.
fn bandwidth_slices(bytes_per_s: u64) -> (usize, Duration) {
    let rate = bytes_per_s.max(1);
    let slice = (rate / BANDWIDTH_SLICES_PER_S).clamp(1, MAX_BANDWIDTH_SLICE);
    let nanos = (u128::from(slice) * 1_000_000_000).div_ceil(u128::from(rate));
    let gap = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
    (slice as usize, gap)
}

/// The connection's close held back by a slow-close fault: set by the answer that carries
/// one, read when the server closes the connection.
#[derive(Clone, Default)]
pub(crate) struct CloseHold(Arc<AtomicU64>);

impl CloseHold {
    fn hold(&self, delay: Duration) {
        let nanos = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_max(nanos, Ordering::Relaxed);
    }

    pub(crate) fn delay(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

/// Turns an answer into what is written back, shaped by `delivery`. A slow close asks
/// HTTP/1.1 to close the connection after the answer (`h2`: the connection is shared by
/// other streams, so only its eventual close is held).
pub(crate) async fn deliver(
    resp: Resp,
    delivery: Option<Delivery>,
    hold: &CloseHold,
    h2: bool,
) -> Response<Delivered> {
    let sliced = |rest: Bytes, slice: usize, gap: Duration, lead: bool| {
        Delivered::Sliced(Sliced {
            rest,
            slice: slice.max(1),
            gap,
            lead,
            started: false,
            pause: None,
        })
    };
    let (mut parts, body) = resp.into_parts();
    let body = match delivery {
        None => Delivered::Whole(body),
        Some(Delivery::SlowClose { delay }) => {
            hold.hold(delay);
            if !h2 {
                parts
                    .headers
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Delivered::Whole(body)
        }
        Some(Delivery::Bandwidth { bytes_per_s }) => {
            let (slice, gap) = bandwidth_slices(bytes_per_s);
            sliced(whole(body).await, slice, gap, true)
        }
        Some(Delivery::Slicer { slice_bytes, delay }) => {
            sliced(whole(body).await, slice_bytes as usize, delay, false)
        }
    };
    Response::from_parts(parts, body)
}

/// The bytes of an answer built in memory.
async fn whole(body: Full<Bytes>) -> Bytes {
    match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    }
}

/// A connection whose shutdown first waits out its [`CloseHold`].
pub(crate) struct HeldClose<S> {
    inner: S,
    hold: CloseHold,
    pause: Option<Pin<Box<Sleep>>>,
}

impl<S> HeldClose<S> {
    pub(crate) fn new(inner: S, hold: CloseHold) -> Self {
        HeldClose {
            inner,
            hold,
            pause: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeldClose<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeldClose<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let delay = this.hold.delay();
        if !delay.is_zero() {
            let pause = this
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
            ready!(pause.as_mut().poll(cx));
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_slices_never_run_faster_than_the_rate() {
        for rate in [1, 7, 10, 999, 1_000_000, 1 << 40] {
            let (slice, gap) = bandwidth_slices(rate);
            // One slice per gap: slice / gap ≤ rate.
            let per_s = slice as f64 / gap.as_secs_f64();
            assert!(per_s <= rate as f64 * (1.0 + 1e-9), "{rate}: {per_s}");
            assert!(slice as u64 <= MAX_BANDWIDTH_SLICE && slice >= 1);
        }
    }
}
