//! The request body the service reads, whichever server read the request: hyper's
//! (HTTP/2, TLS) or the lean HTTP/1.1 connection ([`super::lean`]). One type, so one
//! service serves both and its logic is never copied.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::lean::body::{LeanBody, LeanError};

/// A request's body as the server that read its head hands it to the service.
pub(crate) enum ReqBody {
    /// Read by hyper's server.
    Hyper(Incoming),
    /// Read by the lean HTTP/1.1 connection, straight from its socket.
    Lean(LeanBody),
}

/// A request body that could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error(transparent)]
    Hyper(#[from] hyper::Error),
    #[error(transparent)]
    Lean(#[from] LeanError),
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ReqBody::Hyper(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(BodyError::from))),
            ReqBody::Lean(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(BodyError::from))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReqBody::Hyper(b) => b.is_end_stream(),
            ReqBody::Lean(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReqBody::Hyper(b) => b.size_hint(),
            ReqBody::Lean(b) => b.size_hint(),
        }
    }
}
