//! Guest stdout/stderr: captured into memory up to a cap, never inherited.
//! Past the cap, bytes are counted and dropped; the guest's writes still
//! succeed, so a chatty plugin is truncated rather than broken.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

#[derive(Debug, Default)]
struct Buffer {
    kept: Vec<u8>,
    dropped: u64,
}

/// A capped in-memory output stream; clones share the buffer.
#[derive(Debug, Clone)]
pub(crate) struct CappedOutput {
    cap: usize,
    buffer: Arc<Mutex<Buffer>>,
}

impl CappedOutput {
    pub fn new(cap: u64) -> CappedOutput {
        CappedOutput {
            cap: usize::try_from(cap).unwrap_or(usize::MAX),
            buffer: Arc::default(),
        }
    }

    /// What was kept (lossily decoded) and how many bytes were dropped.
    pub fn contents(&self) -> (String, u64) {
        let b = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        (String::from_utf8_lossy(&b.kept).into_owned(), b.dropped)
    }
}

impl AsyncWrite for CappedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut b = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.cap.saturating_sub(b.kept.len());
        let keep = room.min(buf.len());
        b.kept.extend_from_slice(&buf[..keep]);
        b.dropped += (buf.len() - keep) as u64;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}
