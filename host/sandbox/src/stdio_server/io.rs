//! The host's ends of a bridged server's stdio: its stdout as a plain
//! reader and its stdin as a plain writer (the FIFOs of [`super::pipes`]),
//! its stderr into a sink.
//!
//! Attack: a server that floods stderr, or stops reading, stalling or
//! bloating Warden. Stdout and stderr take separate paths: a pump task
//! reads the container's attached stderr continuously into the caller's
//! sink (a bounded log), so stderr never waits for the stdout reader, and
//! stdout is bounded by its FIFO. When the attached stream ends (the
//! container exited), the pump ends stdout too, so a server that died
//! before opening it is not waited for. Closing stdin closes Warden's
//! end of the stdin FIFO, which the server sees as end of input.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::unix::pipe;

use crate::docker::{Frame, Frames};

/// Where a server's stderr goes, chunk by chunk. Called from the pump
/// task: it must not block.
pub type StderrSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// How long closing stdin may take.
const CLOSE: Duration = Duration::from_secs(2);

/// The server's stdout. Ends when the server closed it, or its
/// container exited.
#[derive(Debug)]
pub struct ServerStdout {
    inner: pipe::Receiver,
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

/// `stdout` as the server's stdout, and the pump of the attached
/// `stderr` into `sink`, which ends stdout (FIFO `out`) when the
/// container's stream ends.
pub(super) fn connect(
    stdout: pipe::Receiver,
    mut stderr: Frames,
    sink: StderrSink,
    out: std::path::PathBuf,
    container: String,
) -> ServerStdout {
    tokio::spawn(async move {
        while let Some(frame) = stderr.next().await {
            match frame {
                // Only stderr is attached; stdout is the FIFO.
                Ok(Frame::Stderr(bytes) | Frame::Stdout(bytes)) => sink(&bytes),
                Err(e) => {
                    tracing::debug!(%container, error = %e, "a bridged server's stderr ended");
                    break;
                }
            }
        }
        super::pipes::end_output(&out);
    });
    ServerStdout { inner: stdout }
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
