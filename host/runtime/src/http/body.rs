//! A response body with the per-request caps: a size limit and the rest
//! of the request's time budget.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Sleep;
use wasmtime_wasi_http::Error;

/// A response body cut off at the size limit and at the request's deadline.
#[derive(Debug)]
pub struct CappedBody {
    inner: Incoming,
    remaining: u64,
    limit: u64,
    deadline: Pin<Box<Sleep>>,
}

impl CappedBody {
    pub fn new(inner: Incoming, limit: u64, deadline: tokio::time::Instant) -> CappedBody {
        CappedBody {
            inner,
            remaining: limit,
            limit,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                if len > this.remaining {
                    this.remaining = 0;
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(this.limit)))));
                }
                this.remaining -= len;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Error::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
