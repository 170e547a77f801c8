//! The host's ends of a bridged server's stdio: its stdout as a plain
//! reader, its stdin as a plain writer.
//!
//! Attack: a server that floods stderr, or stops reading, stalling or
//! bloating Warden. A pump task reads the container's multiplexed output
//! continuously: stdout frames go into a bounded buffer the reader drains,
//! stderr frames go straight to the caller's sink (a bounded log), so
//! stderr never waits for the stdout reader. Closing stdin is a
//! half-close of the attach connection, which closes the server's stdin
//! for good (the container is created with `StdinOnce`).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};

use crate::docker::{Frame, Frames};

/// Where a server's stderr goes, chunk by chunk. Called from the pump
/// task: it must not block.
pub type StderrSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Bytes of stdout buffered ahead of the reader.
const STDOUT_BUFFER: usize = 256 * 1024;

/// How long closing stdin may take.
const CLOSE: Duration = Duration::from_secs(2);

/// The server's stdout. Ends when the container's output ends.
#[derive(Debug)]
pub struct ServerStdout {
    inner: DuplexStream,
}

impl AsyncRead for ServerStdout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

/// Starts the pump: stdout into the returned reader, stderr into `sink`.
pub(super) fn demux(mut output: Frames, sink: StderrSink, container: String) -> ServerStdout {
    let (mut tx, rx) = tokio::io::duplex(STDOUT_BUFFER);
    tokio::spawn(async move {
        while let Some(frame) = output.next().await {
            match frame {
                Ok(Frame::Stdout(bytes)) => {
                    if tx.write_all(&bytes).await.is_err() {
                        // Nobody reads stdout any more: the session ended.
                        return;
                    }
                }
                Ok(Frame::Stderr(bytes)) => sink(&bytes),
                Err(e) => {
                    tracing::debug!(%container, error = %e, "a bridged server's output ended");
                    return;
                }
            }
        }
    });
    ServerStdout { inner: rx }
}

type Input = Pin<Box<dyn AsyncWrite + Send>>;

/// The attach connection's write half, shared by the writer and the
/// handle (either may close it).
#[derive(Clone)]
pub(super) struct StdinSlot(Arc<Mutex<Option<Input>>>);

impl StdinSlot {
    pub(super) fn new(input: Input) -> StdinSlot {
        StdinSlot(Arc::new(Mutex::new(Some(input))))
    }

    fn lock(&self) -> MutexGuard<'_, Option<Input>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes the server's stdin (once; later calls do nothing).
    pub(super) async fn close(&self) {
        let taken = self.lock().take();
        if let Some(mut input) = taken {
            let _ = tokio::time::timeout(CLOSE, input.shutdown()).await;
        }
    }
}

/// The server's stdin. Dropping it closes the server's stdin.
pub struct ServerStdin {
    slot: StdinSlot,
}

impl std::fmt::Debug for ServerStdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerStdin")
    }
}

impl ServerStdin {
    pub(super) fn new(slot: StdinSlot) -> ServerStdin {
        ServerStdin { slot }
    }
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the server's stdin is closed",
    )
}

impl AsyncWrite for ServerStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.slot.lock().as_mut() {
            Some(input) => input.as_mut().poll_write(cx, buf),
            None => Poll::Ready(Err(closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.slot.lock().as_mut() {
            Some(input) => input.as_mut().poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut slot = self.slot.lock();
        let Some(input) = slot.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let done = input.as_mut().poll_shutdown(cx);
        if done.is_ready() {
            *slot = None;
        }
        done
    }
}

impl Drop for ServerStdin {
    fn drop(&mut self) {
        // rmcp drops its writer to close the transport: close stdin then,
        // so the server sees end of input and exits on its own.
        let taken = self.slot.lock().take();
        if let (Some(mut input), Ok(runtime)) = (taken, tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(CLOSE, input.shutdown()).await;
            });
        }
    }
}
